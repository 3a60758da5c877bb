{#-- Stop before anything is read or written when this session's catalog attaches the
     warehouse's registry (`registry`) somewhere else: a Spark Connect server's catalog is
     shared by all its sessions, so after a run on another warehouse every lakemirror name
     there points at that warehouse's tables. One server serves one warehouse. A no-op on the
     embedded engine, whose catalog is per session. --#}
{% macro _refuse_foreign_catalog(registry) %}
    {%- if lakemirror.engine_name() == 'sail' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set wanted = lakemirror._plain_location(
        lakemirror.warehouse_path('_lakemirror', 'control/relations')) -%}
    {%- for row in run_query('describe table extended ' ~ registry).rows
        if row[0] == 'Location' -%}
        {%- set attached = lakemirror._plain_location(row[1]) -%}
        {%- if attached != wanted -%}
            {{ exceptions.raise_compiler_error(
                "lakemirror: this Spark server's catalog attaches " ~ registry ~ " at '"
                ~ attached ~ "', another warehouse's, not this run's '" ~ wanted ~ "'. A Spark "
                ~ "Connect server's catalog is shared by all its sessions, so one server serves "
                ~ "one warehouse. Fix: mirror this warehouse on a Connect server of its own, or "
                ~ "restart the server before switching warehouses "
                ~ "(docs/pages/spark-cluster.md).") }}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{#-- A location without a `file:` scheme or a trailing slash, as Spark may show a local path. --#}
{% macro _plain_location(location) %}
    {{ return((location | replace('file://', '') | replace('file:', '')).rstrip('/')) }}
{% endmacro %}
