{#-- Add columns (dbt Column objects) to a Delta table, keeping its rows; no statement when the
     list is empty. The embedded engine has no ALTER TABLE ADD COLUMNS, so there a zero-row
     MERGE WITH SCHEMA EVOLUTION adds them (a metadata-only commit). --#}
{% macro add_columns(relation, columns) %}
    {{ return(adapter.dispatch('add_columns', 'lakemirror')(relation, columns)) }}
{% endmacro %}

{% macro default__add_columns(relation, columns) %}
    {%- if columns | length > 0 -%}
        {%- do alter_relation_add_remove_columns(relation, columns, none) -%}
    {%- endif -%}
{% endmacro %}

{% macro spark__add_columns(relation, columns) %}
    {%- if columns | length == 0 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- if not lakemirror.engine_capabilities().add_columns -%}
        {%- do lakemirror._evolve_schema(relation, columns) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set definitions = [] -%}
    {%- for column in columns -%}
        {%- do definitions.append(
            lakemirror.quote_identifier(column.name) ~ ' ' ~ column.data_type) -%}
    {%- endfor -%}
    {% call statement('add_columns') -%}
        alter table {{ relation }} add columns ({{ definitions | join(', ') }})
    {%- endcall %}
{% endmacro %}
