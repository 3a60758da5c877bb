{#-- `left.k <=> right.k and ...` over the key columns, a list or one name (true when there are
     none). --#}
{% macro _keys_match(left, right, keys) %}
    {%- set terms = [] -%}
    {%- for key in ([keys] if keys is string else keys) -%}
        {%- set column = lakemirror.quote_identifier(key) -%}
        {%- do terms.append(left ~ '.' ~ column ~ ' <=> ' ~ right ~ '.' ~ column) -%}
    {%- endfor -%}
    {{ return(terms | join(' and ') if terms else 'true') }}
{% endmacro %}
