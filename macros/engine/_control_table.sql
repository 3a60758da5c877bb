{#-- A lakemirror control table at <warehouse>/_lakemirror/control/<name>, created when missing
     and attached to this session (in the catalog's schema _lakemirror_control, with the schema
     suffix); returns its name. Once per invocation: the session keeps it from then on. --#}
{% macro _control_table(name, columns) %}
    {%- set schema = lakemirror.catalog_schema('_lakemirror_control') -%}
    {%- set qualified = schema ~ '.' ~ name -%}
    {%- set ensured = lakemirror._invocation_memo('control_tables') -%}
    {%- if qualified in ensured -%}
        {{ return(qualified) }}
    {%- endif -%}
    {%- set location = lakemirror.warehouse_path('_lakemirror', 'control/' ~ name) -%}
    {%- if schema not in ensured -%}
        {%- do run_query('create schema if not exists ' ~ schema) -%}
        {%- do ensured.update({schema: true}) -%}
    {%- endif -%}
    {%- do run_query(
        'create table if not exists ' ~ qualified ~ ' (' ~ columns ~ ') '
        ~ "using delta location '" ~ location ~ "'") -%}
    {%- do ensured.update({qualified: true}) -%}
    {{ return(qualified) }}
{% endmacro %}
