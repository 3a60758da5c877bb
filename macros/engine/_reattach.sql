{#-- Attach a table to this session again, so the session sees the schema the table's last
     commit gave it: the embedded engine keeps an attached table's schema (added columns,
     relaxed NOT NULL) from when it was attached. A no-op on other engines. --#}
{% macro _reattach(relation, location, format='delta') %}
    {%- if not lakemirror.engine_capabilities().attached_schema_is_fixed -%}
        {{ return(none) }}
    {%- endif -%}
    {%- do run_query('drop table if exists ' ~ relation) -%}
    {%- do run_query('create table ' ~ relation ~ ' using ' ~ format ~ " location '"
        ~ lakemirror._sql_escape(location) ~ "'") -%}
{% endmacro %}
