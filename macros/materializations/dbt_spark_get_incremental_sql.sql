{#-- dbt-spark 1.11 knows only its built-in strategies. Keep those as they are, run lakemirror's
     own (see _lakemirror_strategies) and send any other strategy to dbt-core's
     `get_incremental_<strategy>_sql(arg_dict)` hook, as dbt-databricks does, so new strategies
     never touch the materialization. --#}
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
    {%- set own = lakemirror._lakemirror_strategies() -%}
    {%- if strategy in own -%}
        {{ return(own[strategy](arg_dict)) }}
    {%- endif -%}
    {{ return(adapter.get_incremental_strategy_macro(context, strategy)(arg_dict)) }}
{% endmacro %}

{#-- The strategy the engine runs for the model's incremental_strategy. --#}
{% macro dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) %}
    {%- do lakemirror.cluster_by_clause() -%}  {#-- refused before any SQL, table or not --#}
    {%- if raw_strategy == 'insert_overwrite' and config.get('partition_by')
        and not lakemirror.engine_capabilities().partition_overwrite -%}
        {%- do lakemirror._refuse_engine_limit(
            "incremental_strategy 'insert_overwrite' with partition_by",
            "it has neither `insert overwrite ... partition (...)` nor dynamic partition "
            ~ "overwrite (spark.sql.sources.partitionOverwriteMode)",
            "Use the merge strategy with a unique_key, insert_overwrite without partition_by, "
            ~ "or the spark target") -%}
    {%- endif -%}
    {%- set strategy = lakemirror._engine_strategy(raw_strategy) -%}
    {%- if strategy in lakemirror._spark_builtin_strategies() -%}
        {{ return(dbt.dbt_spark_validate_get_incremental_strategy(strategy, file_format)) }}
    {%- endif -%}
    {%- if file_format != 'delta' -%}
        {{ exceptions.raise_compiler_error(
            "Model " ~ model.name ~ ": incremental_strategy '" ~ raw_strategy
            ~ "' needs file_format 'delta', got '" ~ file_format ~ "'.") }}
    {%- endif -%}
    {%- if strategy not in lakemirror._lakemirror_strategies() -%}
        {#-- dbt's own error for a strategy without its get_incremental_<name>_sql macro. --#}
        {%- do adapter.get_incremental_strategy_macro(context, strategy) -%}
    {%- endif -%}
    {{ return(strategy) }}
{% endmacro %}

{#-- On the embedded engine, microbatch runs as lakemirror's microbatch_replace_where, under that
     name: before a microbatch model with partition_by, dbt-spark's materialization runs
     `set spark.sql.sources.partitionOverwriteMode = DYNAMIC`, which the engine refuses (its
     SET takes no bare word, `found DYNAMIC`, and it has no such setting). --#}
{% macro _engine_strategy(raw_strategy) %}
    {%- if raw_strategy == 'microbatch' and not lakemirror.engine_capabilities().microbatch -%}
        {{ return('microbatch_replace_where') }}
    {%- endif -%}
    {{ return(raw_strategy) }}
{% endmacro %}

{#-- Strategies lakemirror runs itself, by the name _engine_strategy gives them. --#}
{% macro _lakemirror_strategies() %}
    {{ return({'microbatch_replace_where': lakemirror.microbatch_replace_where_sql,
               'apply_changes': lakemirror.get_incremental_apply_changes_sql}) }}
{% endmacro %}

{% macro _spark_builtin_strategies() %}
    {{ return(['append', 'merge', 'insert_overwrite', 'microbatch']) }}
{% endmacro %}
