{#-- Remove a schema's relations (or one of them) from the relation registry; commits only when
     the registry has any, as every registry commit conflicts with concurrent writers. Works on
     the registry this session attached (dbt lists a schema, and so attaches the registry, before
     it drops anything there): a drop dbt makes with its macros alone, outside a command, cannot
     find the warehouse, and leaves the registry as it is. --#}
{% macro _forget_relations(schema_name, identifier=none) %}
    {%- set control = lakemirror.catalog_schema('_lakemirror_control') -%}
    {%- if not execute or not schema_name
        or not run_query("show schemas like '" ~ control ~ "'").rows
        or not run_query("show tables in " ~ control ~ " like 'relations'").rows -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set registry = control ~ '.relations' -%}
    {%- set condition -%}
        schema_name = '{{ lakemirror._sql_escape(lakemirror._warehouse_schema(schema_name)) }}'
        {%- if identifier is not none %}
        and table_name = '{{ lakemirror._sql_escape(identifier) }}'
        {%- endif %}
    {%- endset -%}
    {%- if run_query('select 1 from ' ~ registry ~ ' where ' ~ condition ~ ' limit 1').rows -%}
        {%- do run_query('delete from ' ~ registry ~ ' where ' ~ condition) -%}
        {%- do lakemirror._invocation_memo('registry').clear() -%}
    {%- endif -%}
{% endmacro %}
