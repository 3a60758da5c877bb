{#-- Escape a value for a single-quoted Spark SQL string literal. --#}
{% macro _sql_escape(value) %}
    {{- return(value | string | replace('\\', '\\\\') | replace("'", "\\'")) -}}
{% endmacro %}
