{#-- dbt-core's hook for incremental_strategy='mirror': evolve the target's schema, then MERGE
     (a history model, config mirror_history=true, MERGEs versions instead). --#}
{% macro get_incremental_mirror_sql(arg_dict) %}
    {{ return(adapter.dispatch('get_incremental_mirror_sql', 'lakemirror')(arg_dict)) }}
{% endmacro %}

{% macro default__get_incremental_mirror_sql(arg_dict) %}
    {%- set changes = arg_dict['temp_relation'] -%}
    {%- set change_columns = lakemirror._batch_columns(changes) -%}
    {%- do lakemirror.evolve_mirror_schema(arg_dict['target_relation'], changes,
                                           change_columns) -%}
    {%- set merge_sql = lakemirror.mirror_history_merge_sql if config.get('mirror_history')
        else lakemirror.mirror_merge_sql -%}
    {{ return(merge_sql(
        arg_dict['target_relation'], changes, arg_dict['unique_key'] or [],
        lakemirror._data_columns(changes, change_columns))) }}
{% endmacro %}
