{#-- Which engine runs behind the spark adapter: 'sail' (embedded) or 'spark'.
     Override with the var lakemirror_engine (e.g. for a Sail cluster on the connect target). --#}
{% macro engine_name() %}
    {{ return(adapter.dispatch('engine_name', 'lakemirror')()) }}
{% endmacro %}

{% macro default__engine_name() %}
    {{ return(var('lakemirror_engine', target.type)) }}
{% endmacro %}

{% macro spark__engine_name() %}
    {{ return(var('lakemirror_engine', 'sail' if target.name == 'embedded' else 'spark')) }}
{% endmacro %}
