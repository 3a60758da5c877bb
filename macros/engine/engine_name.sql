{#-- Which engine runs behind the spark adapter: 'sail' (embedded) or 'spark', known by the
     target's mark (server_side_parameters `spark.lakemirror.engine`, which dbt's `target`
     does not show: it is read from the adapter's credentials), never by the target's name.
     Override with the var lakemirror_engine (e.g. for a Sail cluster on the connect target). --#}
{% macro engine_name() %}
    {{ return(adapter.dispatch('engine_name', 'lakemirror')()) }}
{% endmacro %}

{% macro default__engine_name() %}
    {{ return(var('lakemirror_engine', target.type)) }}
{% endmacro %}

{% macro spark__engine_name() %}
    {%- set mark = adapter.config.credentials.server_side_parameters.get(
        'spark.lakemirror.engine') -%}
    {{ return(var('lakemirror_engine', 'sail' if mark == 'embedded' else 'spark')) }}
{% endmacro %}
