{#-- The positions a model reads `mirror`'s changes between, fixed once per build (kept in the
     invocation's memo for record_change_watermarks): `end`, the mirror's applied batch end;
     `start`, the position the model's last recorded build read through (0 on a first build or
     a full refresh; a build before the mirror's first batch read nothing, and any mirror goes
     on from it). Refuses a start the mirror can no longer answer for: the mirror was
     re-created since (another `mirror_since`), or staging compaction folded its deletes.
     One statement reads it all. --#}
{% macro _change_bounds(mirror) %}
    {%- set bounds = lakemirror._invocation_memo('change_bounds') -%}
    {%- set key = model.unique_id ~ ' ' ~ mirror.name -%}
    {%- if key in bounds -%}
        {{ return(bounds[key]) }}
    {%- endif -%}
    {%- set row = run_query(lakemirror._change_bounds_query(mirror, is_incremental())).rows[0] -%}
    {%- set end, since = row[0], row[1] -%}
    {%- set start = 0 -%}
    {%- if is_incremental() -%}
        {%- set position, recorded_since, compacted, log_files = row[2:] -%}
        {%- if position is none -%}
            {%- do lakemirror._refuse_change_start(mirror, 'no build of it is recorded') -%}
        {%- elif recorded_since not in [since, ''] -%}
            {%- do lakemirror._refuse_change_start(
                mirror, 'the mirrored table was re-created since its last build') -%}
        {%- elif log_files is none -%}
            {%- do lakemirror._refuse_change_start(
                mirror, 'no commit is left in the Delta log of its staging table at '
                ~ lakemirror._staging_log(mirror) ~ ' to tell whether staging compaction '
                ~ 'folded them') -%}
        {%- endif -%}
        {%- set start = position | int -%}
        {%- if (compacted or 0) | int > start -%}
            {%- do lakemirror._refuse_change_start(
                mirror, 'staging compaction folded the changes after its last build, '
                ~ 'deletes included') -%}
        {%- endif -%}
    {%- endif -%}
    {%- do bounds.update({key: {'mirror': mirror.name, 'since': since, 'start': start,
                                'end': end | int}}) -%}
    {{ return(bounds[key]) }}
{% endmacro %}

{#-- One row: the mirror's applied batch end and when its first batch was recorded; for an
     incremental build also the model's last recorded position and the mirror_since it was
     recorded with (NULL when none), the position staging compaction folded the mirror's
     changes through ('' when never: every staging commit after a fold carries it in its
     commit info, so the newest commit says) and the number of staging log files (NULL when
     there are none). --#}
{% macro _change_bounds_query(mirror, incremental) %}
    {%- set name = "'" ~ lakemirror._sql_escape(mirror.name) ~ "'" -%}
    {%- set batches -%}
        select
            coalesce(max(case when kind = 'applied' then batch_end end), 0) as end_position,
            coalesce(min(recorded_at), '') as since
        from {{ lakemirror._mirror_batches_table() }}
        where relation_name = {{ name }}
    {%- endset -%}
    {%- if not incremental -%}
        {{ return(batches) }}
    {%- endif -%}
    {%- set query -%}
        select batches.*, recorded.position, recorded.mirror_since, staging.compacted,
            staging.log_files
        from ({{ batches }}) as batches
        left join (
            select position, mirror_since
            from {{ lakemirror._change_watermarks_table() }}
            where model_name = '{{ lakemirror._sql_escape(this | string) }}'
                and mirror_name = {{ name }}
            order by recorded_at desc, position desc
            limit 1
        ) as recorded on true
        left join (
            select
                regexp_extract(cast(content as string),
                    '"lakemirror[.]compactedThrough":"([0-9]+)"', 1) as compacted,
                count(*) over () as log_files
            from binaryFile.{{ lakemirror.quote_identifier(
                lakemirror._staging_log(mirror) ~ '/*.json') }}
            order by path desc
            limit 1
        ) as staging on true
    {%- endset -%}
    {{ return(query) }}
{% endmacro %}

{#-- Where the staging table behind `mirror` keeps its Delta log. --#}
{% macro _staging_log(mirror) %}
    {%- set schema, table = mirror.name.split('.', 1) -%}
    {{ return(lakemirror.warehouse_path('_lakemirror', 'staging/' ~ schema ~ '/' ~ table)
        ~ '/_delta_log') }}
{% endmacro %}

{% macro _refuse_change_start(mirror, reason) %}
    {{ exceptions.raise_compiler_error(
        "lakemirror: model " ~ model.name ~ " cannot take the changes of " ~ mirror.name
        ~ " since its last build: " ~ reason ~ ". Rebuild it: dbt run --full-refresh "
        ~ "--select " ~ model.name ~ ".") }}
{% endmacro %}
