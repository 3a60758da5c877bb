{#-- dbt-core's hook for incremental_strategy='mirror': evolve the target's schema, then MERGE. --#}
{% macro get_incremental_mirror_sql(arg_dict) %}
    {{ return(adapter.dispatch('get_incremental_mirror_sql', 'lakemirror')(arg_dict)) }}
{% endmacro %}

{% macro default__get_incremental_mirror_sql(arg_dict) %}
    {%- set changes = arg_dict['temp_relation'] -%}
    {%- do lakemirror.evolve_mirror_schema(arg_dict['target_relation'], changes) -%}
    {{ return(lakemirror.mirror_merge_sql(
        arg_dict['target_relation'], changes, arg_dict['unique_key'] or [],
        lakemirror._data_columns(changes))) }}
{% endmacro %}
