{#-- Rewrite a Delta table so it has exactly `columns` (dbt Column objects), in that order:
     existing columns cast to the given type, missing ones NULL of that type. Used to remove
     columns and change types, which Delta without column mapping cannot do in place. A
     `create or replace` at the table's own location reads the previous version, so the
     table's Delta history (and time travel) is kept. Partitioning and tblproperties follow
     the running model's config, as when dbt-spark created the table. --#}
{% macro rewrite_columns(relation, columns) %}
    {{ return(adapter.dispatch('rewrite_columns', 'lakemirror')(relation, columns)) }}
{% endmacro %}

{% macro default__rewrite_columns(relation, columns) %}
    {{ exceptions.raise_compiler_error(
        "lakemirror.rewrite_columns(" ~ relation ~ "): rewriting a table's columns needs Delta "
        ~ "on Spark, got adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{% macro spark__rewrite_columns(relation, columns) %}
    {%- if columns | length == 0 -%}
        {{ exceptions.raise_compiler_error(
            "lakemirror.rewrite_columns(" ~ relation ~ "): a table needs at least one column.") }}
    {%- endif -%}
    {%- set existing = adapter.get_columns_in_relation(relation)
        | map(attribute='name') | map('lower') | list -%}
    {%- set values = [] -%}
    {%- for column in columns -%}
        {%- set value = lakemirror.quote_identifier(column.name)
            if column.name | lower in existing else 'null' -%}
        {%- do values.append('cast(' ~ value ~ ' as ' ~ column.data_type ~ ') as '
            ~ lakemirror.quote_identifier(column.name)) -%}
    {%- endfor -%}
    {#-- Sail's create or replace keeps the old schema unless the write may overwrite it. --#}
    {%- set options = "options ('overwriteSchema' = 'true')"
        if lakemirror.engine_name() == 'sail' else '' -%}
    {% call statement('rewrite_columns') -%}
        create or replace table {{ relation }}
        using delta
        {{ options }}
        {{ partition_cols(label='partitioned by') }}
        location '{{ lakemirror._sql_escape(lakemirror._table_location(relation)) }}'
        {{ tblproperties_clause() }}
        as select {{ values | join(', ') }}
        from {{ relation }}
    {%- endcall %}
{% endmacro %}
