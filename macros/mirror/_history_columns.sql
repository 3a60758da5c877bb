{#-- The columns of a history table, quoted: the data columns, then the validity columns. --#}
{% macro _history_columns(data_columns) %}
    {%- set columns = [] -%}
    {%- for column in data_columns -%}
        {%- do columns.append(lakemirror.quote_identifier(column)) -%}
    {%- endfor -%}
    {{ return(columns + ['_lm_valid_from', '_lm_valid_to', '_lm_is_current', '_lm_is_deleted']) }}
{% endmacro %}
