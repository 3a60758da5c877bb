{#-- Make `columns` (dbt Column objects) of a Delta table nullable, so a write can give them
     NULL. Spark's CREATE TABLE AS SELECT makes every column nullable; the embedded engine keeps
     the select's nullability (a literal or an aggregate column is NOT NULL), so there the
     columns are relaxed with a zero-row schema-evolution MERGE, which commits only once. --#}
{% macro allow_nulls(relation, columns) %}
    {{ return(adapter.dispatch('allow_nulls', 'lakemirror')(relation, columns)) }}
{% endmacro %}

{% macro default__allow_nulls(relation, columns) %}
    {{ return(none) }}
{% endmacro %}

{% macro spark__allow_nulls(relation, columns) %}
    {%- if columns | length > 0 and not lakemirror.engine_capabilities().ctas_relaxes_nulls -%}
        {%- do lakemirror._evolve_schema(relation, columns) -%}
    {%- endif -%}
{% endmacro %}
