{#-- A name (of a column, table or schema, from any data) as a quoted SQL identifier, quote
     characters inside doubled, so a name never becomes SQL: `a``b` on Spark, "a""b" in
     standard SQL. dbt-spark's adapter.quote does not escape, so lakemirror never uses it. --#}
{% macro quote_identifier(name) %}
    {{ return(adapter.dispatch('quote_identifier', 'lakemirror')(name)) }}
{% endmacro %}

{% macro default__quote_identifier(name) %}
    {{ return('"' ~ name | string | replace('"', '""') ~ '"') }}
{% endmacro %}

{% macro spark__quote_identifier(name) %}
    {{ return('`' ~ name | string | replace('`', '``') ~ '`') }}
{% endmacro %}
