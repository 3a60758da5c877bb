{#-- Post-hook: record the relation this node built in the relation registry (under its
     warehouse schema, without the catalog's schema suffix), as it is: a table
     with its format and location, a view with its SQL (format 'view'). Writes only when the
     entry is new or changed (a table that became a view, a view's new SQL): a new entry is a
     blind append, which never conflicts with the other models registering theirs at the same
     moment (on a fresh warehouse, all of them); a changed one a MERGE, which reads the
     registry and so may conflict. Ephemeral models build nothing. --#}
{% macro register_relation(relation=this) %}
    {{ return(adapter.dispatch('register_relation', 'lakemirror')(relation)) }}
{% endmacro %}

{% macro default__register_relation(relation) %}
    {{ return('') }}
{% endmacro %}

{% macro spark__register_relation(relation) %}
    {%- if not execute or config.get('materialized') == 'ephemeral' -%}
        {{ return('') }}
    {%- endif -%}
    {%- set entry = lakemirror._registry_entry(relation) -%}
    {%- set registry = lakemirror._relations_table() -%}
    {%- set schema = lakemirror._warehouse_schema(relation.schema) -%}
    {%- set key -%}
        schema_name = '{{ lakemirror._sql_escape(schema) }}'
        and table_name = '{{ lakemirror._sql_escape(relation.identifier) }}'
    {%- endset -%}
    {%- set attached = lakemirror._invocation_memo('registry').get('entries') -%}
    {%- set name = schema ~ '.' ~ relation.identifier -%}
    {%- set known = attached.get(name, []) if attached is not none
        else run_query('select location, coalesce(format, \'delta\'), definition from '
            ~ registry ~ ' where ' ~ key).rows -%}
    {%- set changed = [] -%}
    {%- for row in known if row | list != entry -%}
        {%- do changed.append(row) -%}
    {%- endfor -%}
    {%- if known | length > 0 and not changed -%}
        {{ return('') }}
    {%- endif -%}
    {%- if attached is not none -%}
        {%- do attached.update({name: [entry]}) -%}
    {%- endif -%}
    {%- set values = [] -%}
    {%- for value in [schema, relation.identifier] + entry -%}
        {%- do values.append('null' if value is none
            else "'" ~ lakemirror._sql_escape(value) ~ "'") -%}
    {%- endfor -%}
    {%- if known | length == 0 %}
    insert into {{ registry }} (schema_name, table_name, location, format, definition)
    values ({{ values | join(', ') }})
    {%- else %}
    merge into {{ registry }} as registry
    using (
        select
            {{ values[0] }} as schema_name,
            {{ values[1] }} as table_name,
            {{ values[2] }} as location,
            {{ values[3] }} as format,
            {{ values[4] }} as definition
    ) as built
    on registry.schema_name = built.schema_name and registry.table_name = built.table_name
    when matched then update set
        location = built.location, format = built.format, definition = built.definition
    when not matched then insert (schema_name, table_name, location, format, definition)
        values (built.schema_name, built.table_name, built.location, built.format,
                built.definition)
    {%- endif %}
{% endmacro %}

{#-- [location, format, definition] of the relation the running node built. --#}
{% macro _registry_entry(relation) %}
    {%- if config.get('materialized') == 'view' -%}
        {{ return([none, 'view', model.compiled_code | trim]) }}
    {%- endif -%}
    {%- set format = config.get('file_format') or 'delta' -%}
    {{ return([lakemirror._table_location(relation), format, none]) }}
{% endmacro %}
