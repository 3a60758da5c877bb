{#-- Where a dbt-built Delta table lives: location_root/<identifier> when the running model sets
     location_root, else <warehouse>/<schema>/<identifier> (as spark__location_clause). --#}
{% macro _table_location(relation) %}
    {%- set location_root = config.get('location_root') if config is defined else none -%}
    {%- if location_root -%}
        {{ return(location_root ~ '/' ~ relation.identifier) }}
    {%- endif -%}
    {{ return(lakemirror.warehouse_path(relation.schema, relation.identifier)) }}
{% endmacro %}
