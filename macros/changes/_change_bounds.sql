{#-- The positions a model reads `mirror`'s changes between, fixed once per build (kept in the
     invocation's memo for record_change_watermarks): `end`, the mirror's applied batch end;
     `start`, the position the model's last recorded build read through (0 on a first build or
     a full refresh; a build before the mirror's first batch read nothing, and any mirror goes
     on from it). Refuses a start the mirror can no longer answer for: the mirror was
     re-created since (another `mirror_since`), or staging compaction folded its deletes. --#}
{% macro _change_bounds(mirror) %}
    {%- set bounds = lakemirror._invocation_memo('change_bounds') -%}
    {%- set key = model.unique_id ~ ' ' ~ mirror.name -%}
    {%- if key in bounds -%}
        {{ return(bounds[key]) }}
    {%- endif -%}
    {%- set name = "'" ~ lakemirror._sql_escape(mirror.name) ~ "'" -%}
    {%- set model_name = "'" ~ lakemirror._sql_escape(this | string) ~ "'" -%}
    {%- set batches = lakemirror._mirror_batches_table() -%}
    {%- set end, since = run_query(
        'select coalesce(max(case when kind = \'applied\' then batch_end end), 0), '
        ~ 'coalesce(min(recorded_at), \'\') from ' ~ batches
        ~ ' where relation_name = ' ~ name).rows[0] -%}
    {%- set start = 0 -%}
    {%- if is_incremental() -%}
        {%- set last = run_query(
            'select position, mirror_since from ' ~ lakemirror._change_watermarks_table()
            ~ ' where model_name = ' ~ model_name ~ ' and mirror_name = ' ~ name
            ~ ' order by recorded_at desc, position desc limit 1').rows -%}
        {%- if last | length == 0 -%}
            {%- do lakemirror._refuse_change_start(mirror, 'no build of it is recorded') -%}
        {%- elif last[0][1] not in [since, ''] -%}
            {%- do lakemirror._refuse_change_start(
                mirror, 'the mirrored table was re-created since its last build') -%}
        {%- endif -%}
        {%- set start = last[0][0] | int -%}
        {%- if lakemirror._compacted_through(mirror) > start -%}
            {%- do lakemirror._refuse_change_start(
                mirror, 'staging compaction folded the changes after its last build, '
                ~ 'deletes included') -%}
        {%- endif -%}
    {%- endif -%}
    {%- do bounds.update({key: {'mirror': mirror.name, 'since': since, 'start': start,
                                'end': end | int}}) -%}
    {{ return(bounds[key]) }}
{% endmacro %}

{% macro _refuse_change_start(mirror, reason) %}
    {{ exceptions.raise_compiler_error(
        "lakemirror: model " ~ model.name ~ " cannot take the changes of " ~ mirror.name
        ~ " since its last build: " ~ reason ~ ". Rebuild it: dbt run --full-refresh "
        ~ "--select " ~ model.name ~ ".") }}
{% endmacro %}

{#-- The position staging compaction folded `mirror`'s changes through (0 when never), as every
     staging commit after the fold carries it in its commit info. --#}
{% macro _compacted_through(mirror) %}
    {%- set schema, table = mirror.name.split('.', 1) -%}
    {%- set log = lakemirror.warehouse_path('_lakemirror', 'staging/' ~ schema ~ '/' ~ table)
        ~ '/_delta_log' -%}
    {%- set rows = run_query(
        "select regexp_extract(cast(content as string), "
        ~ "'\"lakemirror[.]compactedThrough\":\"([0-9]+)\"', 1) from binaryFile."
        ~ lakemirror.quote_identifier(log ~ '/*.json') ~ " order by path desc limit 1").rows -%}
    {{ return((rows[0][0] or 0) | int if rows else 0) }}
{% endmacro %}
