{#-- Names of a change relation's data columns (without __rowMarker__ and _lm_ columns). --#}
{% macro _data_columns(relation) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set names = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- if column.name != '__rowMarker__' and not column.name.startswith('_lm_') -%}
            {%- do names.append(column.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(names) }}
{% endmacro %}
