{#-- Stop before anything is read or written when this session's catalog attaches the
     warehouse's registry (`registry`) somewhere else: a Spark Connect server's catalog is
     shared by all its sessions, so after a run on another warehouse with the same schema
     suffix (catalog_schema) every lakemirror name there points at that warehouse's tables.
     A no-op on the embedded engine, whose catalog is per session. --#}
{% macro _refuse_foreign_catalog(registry) %}
    {%- if lakemirror.engine_capabilities().catalog_in_session -%}
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
                ~ "Connect server's catalog is shared by all its sessions: warehouses on one "
                ~ "server need schema names of their own. Fix: give this warehouse a schema "
                ~ "suffix no other warehouse on this server uses, and keep it for every run "
                ~ "(e.g. export LAKEMIRROR_SCHEMA_SUFFIX=_sales), or mirror it on a Connect "
                ~ "server of its own "
                ~ "(docs/pages/spark-cluster.md).") }}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{#-- A location without a `file:` scheme or a trailing slash, as Spark may show a local path. --#}
{% macro _plain_location(location) %}
    {{ return((location | replace('file://', '') | replace('file:', '')).rstrip('/')) }}
{% endmacro %}
