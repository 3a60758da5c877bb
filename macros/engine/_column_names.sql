{#-- A relation's column names, in order, from a zero-row select: one statement, where
     adapter.get_columns_in_relation needs two on engines whose catalog does not describe
     attached tables (names, then types). --#}
{% macro _column_names(relation) %}
    {{ return(run_query('select * from ' ~ relation ~ ' limit 0').column_names | list) }}
{% endmacro %}
