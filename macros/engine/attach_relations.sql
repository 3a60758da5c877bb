{#-- Attach the warehouse's registered relations to this engine session: tables with their own
     format at their location, then views from their SQL. The embedded engine keeps its catalog
     in memory per session, so each dbt invocation finds its relations again here (dbt lists a
     schema's relations first thing: spark__list_relations_without_caching, whose first listing
     of an invocation attaches); on engines with a persistent metastore this is a cheap no-op,
     and it is how tables written by lakemirror ingest (staging) become known to them. --#}
{% macro attach_relations(schema_name=none) %}
    {{ return(adapter.dispatch('attach_relations', 'lakemirror')(schema_name)) }}
{% endmacro %}

{% macro default__attach_relations(schema_name=none) %}
    {{ return('') }}
{% endmacro %}

{% macro spark__attach_relations(schema_name=none) %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set registry = lakemirror._relations_table() -%}
    {%- do lakemirror._refuse_foreign_catalog(registry) -%}
    {%- set query -%}
        select schema_name, table_name, location, coalesce(format, 'delta'), definition
        from {{ registry }}
        {%- if schema_name is not none %}
        where schema_name = '{{ lakemirror._sql_escape(lakemirror._warehouse_schema(schema_name)) }}'
        {%- endif %}
    {%- endset -%}
    {#-- lakemirror run leaves out tables whose Delta log it found damaged. --#}
    {%- set unavailable = var('lakemirror_damaged_locations', []) -%}
    {%- set rows = run_query(query).rows -%}
    {%- if schema_name is none -%}
        {%- do lakemirror._remember_registry(rows) -%}
    {%- endif -%}
    {%- set schemas = [] -%}
    {%- for row in rows if row[0] not in schemas -%}
        {%- do schemas.append(row[0]) -%}
        {%- do run_query('create schema if not exists '
            ~ lakemirror.quote_identifier(lakemirror.catalog_schema(row[0]))) -%}
    {%- endfor -%}
    {%- set known = [] -%}
    {%- for row in rows if row[3] == 'view' or row[2] not in unavailable -%}
        {%- do known.append(lakemirror._catalog_name(row)) -%}
    {%- endfor -%}
    {%- for row in rows if row[3] != 'view' and row[2] not in unavailable -%}
        {%- do run_query('create table if not exists ' ~ lakemirror._registered_name(row)
            ~ ' using ' ~ row[3] ~ " location '" ~ lakemirror._sql_escape(row[2]) ~ "'") -%}
    {%- endfor -%}
    {%- do lakemirror._attach_views(rows | selectattr(3, 'equalto', 'view') | list, known) -%}
    {{ return('') }}
{% endmacro %}

{#-- Create the registered views, each after the registered views its model reads in dbt's
     graph (a view on a view). A view whose model reads a relation the registry lacks (its data
     was deleted, so lakemirror forgot it) is skipped with a warning, and so are the views on
     it: the engine would refuse it, and dbt-spark would take that refusal for an empty schema
     and rebuild every incremental model in it from scratch. Building the view's model creates
     it again. --#}
{% macro _attach_views(views, known) %}
    {%- set inputs = lakemirror._view_inputs() if views else {} -%}
    {%- for pass in range(views | length) -%}
        {%- for view in views if lakemirror._catalog_name(view) in known -%}
            {%- set name = lakemirror._catalog_name(view) -%}
            {%- set lacking = inputs.get(name, []) | reject('in', known) | list -%}
            {%- if lacking -%}
                {%- do known.remove(name) -%}
                {%- do exceptions.warn('lakemirror: view ' ~ name ~ ' is not attached: it reads '
                    ~ lacking | join(', ') ~ ', which the warehouse no longer holds (deleted '
                    ~ 'outside dbt?). Fix: build ' ~ lacking | join(', ') ~ ' and the view again'
                    ~ ' (dbt run --select +' ~ view[1] ~ ').') -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set attachable = [] -%}
    {%- for view in views if lakemirror._catalog_name(view) in known -%}
        {%- do attachable.append(view) -%}
    {%- endfor -%}
    {%- for view in lakemirror._views_in_dependency_order(attachable, inputs) -%}
        {%- do run_query('create view if not exists '
            ~ lakemirror._registered_name(view) ~ ' as ' ~ view[4]) -%}
    {%- endfor -%}
{% endmacro %}

{#-- Registry rows of `views` in an order where each comes after the views it reads (`inputs`:
     'schema.name' -> what its model reads, from _view_inputs). A view dbt's graph does not know
     (its model was deleted or renamed since) comes after all the views the graph knows, in
     registry order. --#}
{% macro _views_in_dependency_order(views, inputs) %}
    {%- set names = [] -%}
    {%- for view in views -%}
        {%- do names.append(lakemirror._catalog_name(view)) -%}
    {%- endfor -%}
    {%- set modelled = names | select('in', inputs) | list -%}
    {%- set ordered = [] -%}
    {%- set placed = [] -%}
    {%- for pass in range(views | length) -%}
        {%- for view in views if lakemirror._catalog_name(view) not in placed -%}
            {%- set name = lakemirror._catalog_name(view) -%}
            {%- set reads = inputs[name] if name in inputs else modelled -%}
            {%- if not (reads | select('in', names) | reject('in', placed) | list)
                or pass == (views | length) - 1 -%}
                {%- do ordered.append(view) -%}
                {%- do placed.append(name) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(ordered) }}
{% endmacro %}

{#-- 'schema.name' of each view model -> 'schema.name' of the models, seeds and snapshots it
     reads (ephemeral ones are part of its SQL), lower case, from dbt's graph. --#}
{% macro _view_inputs() %}
    {%- set built = {} -%}
    {%- for node in graph.nodes.values() if node.resource_type in ('model', 'seed', 'snapshot')
        and node.config.materialized != 'ephemeral' -%}
        {%- set name = node.schema ~ '.' ~ (node.alias or node.name) -%}
        {%- do built.update({node.unique_id: name | lower}) -%}
    {%- endfor -%}
    {%- set inputs = {} -%}
    {%- for node in graph.nodes.values() if node.unique_id in built
        and node.config.materialized == 'view' -%}
        {%- set reads = [] -%}
        {%- for parent in node.depends_on.nodes if parent in built -%}
            {%- do reads.append(built[parent]) -%}
        {%- endfor -%}
        {%- do inputs.update({built[node.unique_id]: reads}) -%}
    {%- endfor -%}
    {{ return(inputs) }}
{% endmacro %}

{#-- `schema`.`name` of a registry row in the catalog (its schema with the schema suffix). --#}
{% macro _registered_name(row) %}
    {{ return(lakemirror.quote_identifier(lakemirror.catalog_schema(row[0])) ~ '.'
        ~ lakemirror.quote_identifier(row[1])) }}
{% endmacro %}

{#-- 'schema.name' of a registry row in the catalog, lower case, as _view_inputs names it. --#}
{% macro _catalog_name(row) %}
    {{ return((lakemirror.catalog_schema(row[0]) ~ '.' ~ row[1]) | lower) }}
{% endmacro %}

{#-- Keep the whole registry as this invocation attached it, for register_relation: a relation
     built since is added to it as it is registered, and a forgotten one makes it unknown. --#}
{% macro _remember_registry(rows) %}
    {%- set entries = {} -%}
    {%- for row in rows -%}
        {%- do entries.setdefault(row[0] ~ '.' ~ row[1], []).append(row[2:5] | list) -%}
    {%- endfor -%}
    {%- do lakemirror._invocation_memo('registry').update({'entries': entries}) -%}
{% endmacro %}
