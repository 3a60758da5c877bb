{#-- Drop mirrored tables, their history tables (docs/pages/history.md) and
     their staging tables from the engine's catalog (`dbt run-operation
     lakemirror.drop_mirrored_tables --args '{tables: [dbo.customers]}'`). lakemirror runs it when
     a landing-zone folder is deleted or recreated, then deletes the tables' folders, since
     dropping an external table keeps its files. --#}
{% macro drop_mirrored_tables(tables) %}
    {{ return(adapter.dispatch('drop_mirrored_tables', 'lakemirror')(tables)) }}
{% endmacro %}

{% macro default__drop_mirrored_tables(tables) %}
    {%- for table in tables -%}
        {%- set parts = table.split('.') -%}
        {%- if parts | length != 2 -%}
            {{ exceptions.raise_compiler_error(
                "lakemirror.drop_mirrored_tables: '" ~ table ~ "' is not <schema>.<table>") }}
        {%- endif -%}
        {%- do run_query('drop table if exists '
            ~ lakemirror.quote_identifier(lakemirror.catalog_schema(parts[0])) ~ '.'
            ~ lakemirror.quote_identifier(parts[1])) -%}
        {%- do run_query('drop table if exists '
            ~ lakemirror.quote_identifier(lakemirror.catalog_schema(parts[0])) ~ '.'
            ~ lakemirror.quote_identifier(parts[1] ~ '__history')) -%}
        {%- do run_query('drop table if exists '
            ~ lakemirror.catalog_schema('_lakemirror_staging') ~ '.'
            ~ lakemirror.quote_identifier(parts[0] ~ '__' ~ parts[1])) -%}
        {%- do log('lakemirror: dropped ' ~ table, info=true) -%}
    {%- endfor -%}
{% endmacro %}
