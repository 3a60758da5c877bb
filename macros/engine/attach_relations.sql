{#-- Attach the warehouse's registered Delta tables to this engine session. The embedded engine
     keeps its catalog in memory per session, so each dbt invocation finds its tables again
     here; on engines with a persistent metastore this is a cheap no-op, and it is how tables
     written by lakemirror ingest (staging) become known to them. --#}
{% macro attach_relations(schema_name=none) %}
    {{ return(adapter.dispatch('attach_relations', 'lakemirror')(schema_name)) }}
{% endmacro %}

{% macro default__attach_relations(schema_name=none) %}
    {{ return('') }}
{% endmacro %}

{% macro spark__attach_relations(schema_name=none) %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set registry = lakemirror._relations_table() -%}
    {%- set query -%}
        select distinct schema_name, table_name, location from {{ registry }}
        {%- if schema_name is not none %}
        where schema_name = '{{ lakemirror._sql_escape(schema_name) }}'
        {%- endif %}
    {%- endset -%}
    {#-- lakemirror run leaves out tables whose Delta log it found damaged. --#}
    {%- set unavailable = var('lakemirror_damaged_locations', []) -%}
    {%- for row in run_query(query) if row[2] not in unavailable -%}
        {%- do run_query('create schema if not exists ' ~ lakemirror.quote_identifier(row[0])) -%}
        {%- do run_query(
            'create table if not exists ' ~ lakemirror.quote_identifier(row[0]) ~ '.'
            ~ lakemirror.quote_identifier(row[1])
            ~ " using delta location '" ~ lakemirror._sql_escape(row[2]) ~ "'") -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}
