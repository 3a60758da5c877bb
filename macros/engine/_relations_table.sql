{#-- The registry of Delta tables in the warehouse (written by dbt and by lakemirror ingest). --#}
{% macro _relations_table() %}
    {%- set location = lakemirror.warehouse_path('_lakemirror', 'control/relations') -%}
    {%- do run_query('create schema if not exists _lakemirror_control') -%}
    {%- do run_query(
        'create table if not exists _lakemirror_control.relations '
        ~ '(schema_name string, table_name string, location string) '
        ~ "using delta location '" ~ location ~ "'") -%}
    {{ return('_lakemirror_control.relations') }}
{% endmacro %}
