{#-- dbt's column type change (on_schema_change='sync_all_columns') for Delta on every engine:
     the table is rewritten with the column cast to its new type (lakemirror.rewrite_columns). --#}
{% macro spark__alter_column_type(relation, column_name, new_column_type) %}
    {%- set columns = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- if column.name | lower == column_name | lower -%}
            {%- do columns.append(api.Column.create(column.name, new_column_type)) -%}
        {%- else -%}
            {%- do columns.append(column) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do lakemirror.rewrite_columns(relation, columns) -%}
{% endmacro %}
