{#-- A lakemirror control table at <warehouse>/_lakemirror/control/<name>, created when missing
     and attached to this session (in the catalog's schema _lakemirror_control, with the schema
     suffix); returns its name. --#}
{% macro _control_table(name, columns) %}
    {%- set location = lakemirror.warehouse_path('_lakemirror', 'control/' ~ name) -%}
    {%- set schema = lakemirror.catalog_schema('_lakemirror_control') -%}
    {%- do run_query('create schema if not exists ' ~ schema) -%}
    {%- do run_query(
        'create table if not exists ' ~ schema ~ '.' ~ name ~ ' (' ~ columns ~ ') '
        ~ "using delta location '" ~ location ~ "'") -%}
    {{ return(schema ~ '.' ~ name) }}
{% endmacro %}
