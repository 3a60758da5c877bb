{#-- dbt-core's hook for incremental_strategy='mirror'. --#}
{% macro get_incremental_mirror_sql(arg_dict) %}
    {{ return(adapter.dispatch('get_incremental_mirror_sql', 'lakemirror')(arg_dict)) }}
{% endmacro %}

{% macro default__get_incremental_mirror_sql(arg_dict) %}
    {%- set changes = arg_dict['temp_relation'] -%}
    {{ return(lakemirror.mirror_merge_sql(
        arg_dict['target_relation'], changes, arg_dict['unique_key'] or [],
        lakemirror._data_columns(changes))) }}
{% endmacro %}
