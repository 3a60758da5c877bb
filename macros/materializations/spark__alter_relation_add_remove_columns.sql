{#-- dbt's on_schema_change column sync for Delta on every engine: new columns are added in
     place (lakemirror.add_columns); removing columns rewrites the table with the remaining ones
     and the new ones (lakemirror.rewrite_columns), since Delta without column mapping cannot
     drop a column. --#}
{% macro spark__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
    {%- set add_columns = add_columns or [] -%}
    {%- if not remove_columns -%}
        {%- do lakemirror.add_columns(relation, add_columns) -%}
        {%- if add_columns -%}
            {%- do lakemirror._reattach(relation, lakemirror._table_location(relation)) -%}
        {%- endif -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set kept = lakemirror._columns_missing_from(
        adapter.get_columns_in_relation(relation), remove_columns) -%}
    {%- do lakemirror.rewrite_columns(relation, kept + add_columns) -%}
{% endmacro %}
