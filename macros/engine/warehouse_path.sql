{#-- Absolute path of a table folder in the warehouse: <warehouse>/<schema>/<identifier>, the
     schema without the catalog's schema suffix (_warehouse_schema). --#}
{% macro warehouse_path(schema, identifier) %}
    {{ return(adapter.dispatch('warehouse_path', 'lakemirror')(schema, identifier)) }}
{% endmacro %}

{% macro default__warehouse_path(schema, identifier) %}
    {%- set root = var('lakemirror_warehouse') | string -%}
    {%- if not root or not (root.startswith('/') or '://' in root) -%}
        {{ exceptions.raise_compiler_error(
            "lakemirror: the warehouse must be an absolute path or URL, got '" ~ root
            ~ "'. Set LAKEMIRROR_WAREHOUSE (e.g. export LAKEMIRROR_WAREHOUSE=$PWD/warehouse).") }}
    {%- endif -%}
    {{ return(root.rstrip('/') ~ '/' ~ lakemirror._warehouse_schema(schema) ~ '/' ~ identifier) }}
{% endmacro %}
