{#-- Attach the warehouse's registered relations to this engine session: tables with their own
     format at their location, then views from their SQL. The embedded engine keeps its catalog
     in memory per session, so each dbt invocation finds its relations again here (dbt lists a
     schema's relations first thing: spark__list_relations_without_caching); on engines with a
     persistent metastore this is a cheap no-op, and it is how tables written by lakemirror
     ingest (staging) become known to them. --#}
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
        select schema_name, table_name, location, coalesce(format, 'delta'), definition
        from {{ registry }}
        {%- if schema_name is not none %}
        where schema_name = '{{ lakemirror._sql_escape(schema_name) }}'
        {%- endif %}
    {%- endset -%}
    {#-- lakemirror run leaves out tables whose Delta log it found damaged. --#}
    {%- set unavailable = var('lakemirror_damaged_locations', []) -%}
    {%- set rows = run_query(query).rows -%}
    {%- set schemas = [] -%}
    {%- for row in rows if row[0] not in schemas -%}
        {%- do schemas.append(row[0]) -%}
        {%- do run_query('create schema if not exists ' ~ lakemirror.quote_identifier(row[0])) -%}
    {%- endfor -%}
    {%- for row in rows if row[3] != 'view' and row[2] not in unavailable -%}
        {%- do run_query('create table if not exists ' ~ lakemirror._registered_name(row)
            ~ ' using ' ~ row[3] ~ " location '" ~ lakemirror._sql_escape(row[2]) ~ "'") -%}
    {%- endfor -%}
    {%- do lakemirror._attach_views(rows | selectattr(3, 'equalto', 'view') | list) -%}
    {{ return('') }}
{% endmacro %}

{#-- Create the registered views, each after the registered views its SQL names (a view on a
     view), in as many passes as the longest such chain. --#}
{% macro _attach_views(views) %}
    {%- set created = [] -%}
    {%- for pass in range(views | length) -%}
        {%- for view in views if (view[0] ~ '.' ~ view[1]) | lower not in created -%}
            {%- set definition = view[4] | lower | replace('`', '') -%}
            {%- set waits_for = [] -%}
            {%- for other in views if (other[0] ~ '.' ~ other[1]) | lower not in created
                and other != view and (other[0] ~ '.' ~ other[1]) | lower in definition -%}
                {%- do waits_for.append(other) -%}
            {%- endfor -%}
            {%- if not waits_for or pass == views | length - 1 -%}
                {%- do run_query('create view if not exists '
                    ~ lakemirror._registered_name(view) ~ ' as ' ~ view[4]) -%}
                {%- do created.append((view[0] ~ '.' ~ view[1]) | lower) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
{% endmacro %}

{#-- `schema`.`name` of a registry row. --#}
{% macro _registered_name(row) %}
    {{ return(lakemirror.quote_identifier(row[0]) ~ '.' ~ lakemirror.quote_identifier(row[1])) }}
{% endmacro %}
