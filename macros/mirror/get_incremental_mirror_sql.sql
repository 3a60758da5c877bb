{#-- dbt-core's hook for incremental_strategy='mirror': evolve the target's schema, then MERGE
     (a history model, config mirror_history=true, MERGEs versions instead). --#}
{% macro get_incremental_mirror_sql(arg_dict) %}
    {{ return(adapter.dispatch('get_incremental_mirror_sql', 'lakemirror')(arg_dict)) }}
{% endmacro %}

{#-- A model with nothing to apply runs, in place of its MERGE, a statement saying so (dbt-spark's
     incremental materialization always runs one). --#}
{% macro default__get_incremental_mirror_sql(arg_dict) %}
    {%- if lakemirror._nothing_to_apply() -%}
        {{ return("select '" ~ lakemirror._sql_escape(lakemirror._mirror_relation_name())
            ~ "' as relation_name, 'nothing new to apply' as lakemirror_batch") }}
    {%- endif -%}
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
