{#-- The model's config cluster_by (Delta liquid clustering: a column or a list of columns) as
     the `cluster by (...)` clause of its CREATE TABLE, each name quoted, or '' without it.
     Validated before any SQL runs: a list of column names, not with partition_by (Delta
     refuses both), and only on an engine that creates clustered tables (else refused, naming
     the spark and connect targets). --#}
{% macro cluster_by_clause() %}
    {{ return(adapter.dispatch('cluster_by_clause', 'lakemirror')()) }}
{% endmacro %}

{% macro default__cluster_by_clause() %}
    {%- set columns = lakemirror._cluster_by_columns() -%}
    {{ return('cluster by (' ~ lakemirror._quoted_identifiers(columns) | join(', ') ~ ')'
        if columns else '') }}
{% endmacro %}

{#-- The validated cluster_by columns of the running model ([] without them). --#}
{% macro _cluster_by_columns() %}
    {%- set configured = config.get('cluster_by') -%}
    {%- if configured is none or configured == [] -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set columns = [configured] if configured is string else configured -%}
    {%- if columns is mapping or columns is not iterable
        or columns | reject('string') | list | length > 0 -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": cluster_by "
            ~ "must be a column name or a list of column names, e.g. ['customer_id'], got "
            ~ configured ~ ".") }}
    {%- endif -%}
    {%- if config.get('partition_by') -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": cluster_by "
            ~ "and partition_by cannot both be set (Delta Lake clusters a table or partitions "
            ~ "it); keep one.") }}
    {%- endif -%}
    {%- if not lakemirror.engine_capabilities().clustering -%}
        {%- do lakemirror._refuse_engine_limit(
            "cluster_by " ~ columns | join(', '),
            "it has no CREATE TABLE ... CLUSTER BY, refuses writes to clustered Delta tables "
            ~ "and has no OPTIMIZE",
            "Use the spark or connect target (Delta Lake on Spark), or remove cluster_by") -%}
    {%- endif -%}
    {{ return(columns | list) }}
{% endmacro %}
