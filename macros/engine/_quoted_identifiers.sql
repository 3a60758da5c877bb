{#-- quote_identifier of each name, with the engine's implementation looked up once for the list
     (a per-column loop of a wide table otherwise dispatches once per name). --#}
{% macro _quoted_identifiers(names) %}
    {%- set quote = adapter.dispatch('quote_identifier', 'lakemirror') -%}
    {%- set quoted = [] -%}
    {%- for name in names -%}
        {%- do quoted.append(quote(name)) -%}
    {%- endfor -%}
    {{ return(quoted) }}
{% endmacro %}
