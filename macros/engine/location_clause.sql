{#-- Every table dbt creates lives at <warehouse>/<schema>/<alias>, so any Delta reader finds it
     and a new engine session can attach it again. An explicit location_root still wins. --#}
{% macro spark__location_clause() %}
    {%- set location_root = config.get('location_root', validator=validation.any[basestring]) -%}
    {%- if location_root is not none -%}
        {%- set location = location_root ~ '/' ~ model['alias'] -%}
    {%- else -%}
        {%- set location = lakemirror.warehouse_path(model['schema'], model['alias']) -%}
    {%- endif %}
        location '{{ lakemirror._sql_escape(location) }}'
{%- endmacro %}
