{#-- dbt's hook for incremental_strategy='apply_changes': MERGE a model built on
     mirror_changes into its table. Every key the mirror changed since the last build and the
     model's output no longer holds as an upsert (deleted, or filtered or joined away) is
     deleted; a change acts only on rows older than itself, so a retried build is a no-op. --#}
{% macro get_incremental_apply_changes_sql(arg_dict) %}
    {{ return(adapter.dispatch('get_incremental_apply_changes_sql', 'lakemirror')(arg_dict)) }}
{% endmacro %}

{% macro default__get_incremental_apply_changes_sql(arg_dict) %}
    {%- set output = arg_dict['temp_relation'] -%}
    {%- set keys = arg_dict['unique_key'] or [] -%}
    {%- set keys = [keys] if keys is string else keys -%}
    {#-- The output's columns the table has: dbt's on_schema_change added new ones already,
         or ignores them. --#}
    {%- set existing = lakemirror._column_names(arg_dict['target_relation']) | map('lower')
        | list -%}
    {%- set columns = [] -%}
    {%- for column in lakemirror._column_names(output) if column | lower in existing -%}
        {%- do columns.append(column) -%}
    {%- endfor -%}
    {%- set read = lakemirror._changes_read(keys, columns) -%}
    {{ return(lakemirror.apply_changes_merge_sql(
        arg_dict['target_relation'], output, keys, columns, read.changed)) }}
{% endmacro %}

{#-- The one mirror_changes this model read (its upstream, bounds and changed keys), after
     checking the model can be applied by key: a unique_key that is the mirror's keys, and the
     _lm_change and _lm_position columns kept. --#}
{% macro _changes_read(keys, columns) %}
    {%- set reads = [] -%}
    {%- for key, bounds in lakemirror._invocation_memo('change_bounds').items()
        if key.startswith(model.unique_id ~ ' ') -%}
        {%- do reads.append(bounds) -%}
    {%- endfor -%}
    {%- set problem = none -%}
    {%- if reads | length != 1 -%}
        {%- set problem = 'it must read exactly one mirror_changes(ref(...)); it reads '
            ~ reads | length -%}
    {%- elif '_lm_change' not in columns or '_lm_position' not in columns -%}
        {%- set problem = 'its output must keep the _lm_change and _lm_position columns' -%}
    {%- endif -%}
    {%- if problem is none and (not keys
        or keys | map('lower') | sort | list != reads[0]['keys'] | map('lower') | sort | list) -%}
        {%- set problem = 'its unique_key ' ~ keys | tojson ~ ' must be the keys of '
            ~ reads[0].mirror ~ ', ' ~ reads[0]['keys'] | tojson -%}
    {%- endif -%}
    {%- if problem is not none -%}
        {{ exceptions.raise_compiler_error(
            "lakemirror: model " ~ model.name ~ " (incremental_strategy 'apply_changes'): "
            ~ problem ~ ".") }}
    {%- endif -%}
    {{ return({'changed': '(select ' ~ lakemirror._quoted_identifiers(reads[0]['keys'])
        | join(', ') ~ ', _lm_position from ' ~ reads[0].changes ~ ' as changes)'}) }}
{% endmacro %}
