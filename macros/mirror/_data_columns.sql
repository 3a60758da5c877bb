{#-- Names of a change relation's data columns (without __rowMarker__ and _lm_ columns), from
     its `columns` when the caller read them already. --#}
{% macro _data_columns(relation, columns=none) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set names = [] -%}
    {%- for column in columns or adapter.get_columns_in_relation(relation) -%}
        {%- if column.name != '__rowMarker__' and not column.name.startswith('_lm_') -%}
            {%- do names.append(column.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(names) }}
{% endmacro %}
