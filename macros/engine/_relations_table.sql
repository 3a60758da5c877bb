{#-- The registry of the warehouse's relations (written by dbt and by lakemirror ingest): where
     each table lives and in which format (delta, parquet, csv, ...), and each view's SQL
     (format 'view'), so every new engine session can attach them. A registry written before
     format and definition existed gains them here, once (a metadata-only commit); its columns
     are checked once per invocation. --#}
{% macro _relations_table() %}
    {%- set registry = lakemirror._control_table(
        'relations', 'schema_name string, table_name string, location string, format string, '
        ~ 'definition string') -%}
    {%- set checked = lakemirror._invocation_memo('relations_table') -%}
    {%- if checked.get('columns') -%}
        {{ return(registry) }}
    {%- endif -%}
    {%- set names = lakemirror._column_names(registry) -%}
    {%- if 'definition' not in names -%}
        {%- do lakemirror.add_columns(registry, [
            api.Column.create('format', 'string'),
            api.Column.create('definition', 'string')] | rejectattr(
                'name', 'in', names) | list) -%}
        {%- do lakemirror._reattach(registry,
            lakemirror.warehouse_path('_lakemirror', 'control/relations'), 'delta') -%}
    {%- endif -%}
    {%- do checked.update({'columns': true}) -%}
    {{ return(registry) }}
{% endmacro %}
