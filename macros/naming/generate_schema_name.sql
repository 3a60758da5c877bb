{#-- When this repository is the dbt project, dbt takes its generate_schema_name: a model's
     custom schema is used as is (mirrored tables land in their landing-zone schema); models
     without one use the target schema. Either takes the schema suffix (catalog_schema). --#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ lakemirror.catalog_schema(target.schema) }}
    {%- else -%}
        {{ lakemirror.catalog_schema(custom_schema_name | trim) }}
    {%- endif -%}
{%- endmacro %}

{#-- When lakemirror is a package of your project, dbt's own generate_schema_name dispatches
     here (the `dispatch:` block of docs/pages/dbt-project.md): mirror models keep their
     landing-zone schema, every other model is named as dbt names it; either takes the schema
     suffix (catalog_schema). A generate_schema_name of your own comes first: keep
     `custom_schema_name` as is there for models with incremental_strategy 'mirror', and add
     `lakemirror.catalog_schema(...)` around what it returns. --#}
{% macro default__generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is not none and node is not none
            and node.config.get('incremental_strategy') == 'mirror' -%}
        {{ lakemirror.catalog_schema(custom_schema_name | trim) }}
    {%- else -%}
        {%- set schema = dbt.default__generate_schema_name(custom_schema_name, node) | trim -%}
        {{ lakemirror.catalog_schema(schema) }}
    {%- endif -%}
{%- endmacro %}
