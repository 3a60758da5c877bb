{#-- A model's custom schema is used as is (mirrored tables land in their landing-zone schema);
     models without one use the target schema. --#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
