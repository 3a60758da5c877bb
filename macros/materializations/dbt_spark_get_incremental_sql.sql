{#-- dbt-spark 1.11 knows only its built-in strategies. Keep those as they are and send any
     other strategy to dbt-core's `get_incremental_<strategy>_sql(arg_dict)` hook, as
     dbt-databricks does, so new strategies never touch the materialization. --#}
{% macro dbt_spark_get_incremental_sql(
    strategy, source, target, existing, unique_key, incremental_predicates
) %}
    {%- if strategy in lakemirror._spark_builtin_strategies() -%}
        {{ return(dbt.dbt_spark_get_incremental_sql(
            strategy, source, target, existing, unique_key, incremental_predicates)) }}
    {%- endif -%}
    {%- set arg_dict = {
        'target_relation': target,
        'temp_relation': source,
        'unique_key': unique_key,
        'dest_columns': none,
        'incremental_predicates': incremental_predicates,
    } -%}
    {{ return(adapter.get_incremental_strategy_macro(context, strategy)(arg_dict)) }}
{% endmacro %}

{% macro dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) %}
    {%- if raw_strategy == 'insert_overwrite' and config.get('partition_by')
        and lakemirror.engine_name() == 'sail' -%}
        {%- do lakemirror._refuse_engine_limit(
            "incremental_strategy 'insert_overwrite' with partition_by",
            "it has neither `insert overwrite ... partition (...)` nor dynamic partition "
            ~ "overwrite (spark.sql.sources.partitionOverwriteMode)",
            "Use the merge strategy with a unique_key, insert_overwrite without partition_by, "
            ~ "or the spark target") -%}
    {%- endif -%}
    {%- if raw_strategy in lakemirror._spark_builtin_strategies() -%}
        {{ return(dbt.dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format)) }}
    {%- endif -%}
    {%- if file_format != 'delta' -%}
        {{ exceptions.raise_compiler_error(
            "Model " ~ model.name ~ ": incremental_strategy '" ~ raw_strategy
            ~ "' needs file_format 'delta', got '" ~ file_format ~ "'.") }}
    {%- endif -%}
    {#-- dbt's own error for a strategy without its get_incremental_<name>_sql macro. --#}
    {%- do adapter.get_incremental_strategy_macro(context, raw_strategy) -%}
    {{ return(raw_strategy) }}
{% endmacro %}

{% macro _spark_builtin_strategies() %}
    {{ return(['append', 'merge', 'insert_overwrite', 'microbatch']) }}
{% endmacro %}
