{#-- not_null for a column given by its name, whatever characters it holds: the name is quoted
     with lakemirror.quote_identifier (declare the column with `quote: false`, so dbt passes the
     name itself). Mirror models generated before lakemirror.mirror_rows tested their key
     columns with it: their yml files, once edited, are kept as they are and still use it. --#}
{% test not_null_column(model, column_name) %}
    {{ adapter.dispatch('test_not_null_column', 'lakemirror')(model, column_name) }}
{% endtest %}

{% macro default__test_not_null_column(model, column_name) %}
{%- set column = lakemirror.quote_identifier(column_name) %}
select {{ column }}
from {{ model }}
where {{ column }} is null
{% endmacro %}
