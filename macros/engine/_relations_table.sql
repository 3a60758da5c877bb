{#-- The registry of Delta tables in the warehouse (written by dbt and by lakemirror ingest). --#}
{% macro _relations_table() %}
    {{ return(lakemirror._control_table(
        'relations', 'schema_name string, table_name string, location string')) }}
{% endmacro %}
