{#-- A lakemirror control table at <warehouse>/_lakemirror/control/<name>, created when missing
     and attached to this session; returns its name. --#}
{% macro _control_table(name, columns) %}
    {%- set location = lakemirror.warehouse_path('_lakemirror', 'control/' ~ name) -%}
    {%- do run_query('create schema if not exists _lakemirror_control') -%}
    {%- do run_query(
        'create table if not exists _lakemirror_control.' ~ name ~ ' (' ~ columns ~ ') '
        ~ "using delta location '" ~ location ~ "'") -%}
    {{ return('_lakemirror_control.' ~ name) }}
{% endmacro %}
