{#-- Post-hook: record the table this node built in the relation registry (once). --#}
{% macro register_relation(relation=this) %}
    {{ return(adapter.dispatch('register_relation', 'lakemirror')(relation)) }}
{% endmacro %}

{% macro default__register_relation(relation) %}
    {{ return('') }}
{% endmacro %}

{% macro spark__register_relation(relation) %}
    {%- if config.get('materialized') in ['view', 'ephemeral'] -%}
        {{ return('') }}
    {%- endif -%}
    {%- set registry = lakemirror._relations_table() -%}
    {%- set location = lakemirror.warehouse_path(relation.schema, relation.identifier) -%}
    insert into {{ registry }}
    {%- set schema = "'" ~ lakemirror._sql_escape(relation.schema) ~ "'" -%}
    {%- set identifier = "'" ~ lakemirror._sql_escape(relation.identifier) ~ "'" %}
    select {{ schema }}, {{ identifier }}, '{{ lakemirror._sql_escape(location) }}'
    where not exists (
        select 1 from {{ registry }}
        where schema_name = {{ schema }} and table_name = {{ identifier }}
    )
{% endmacro %}
