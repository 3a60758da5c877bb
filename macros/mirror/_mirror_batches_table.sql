{#-- Append-only log of mirror batches: 'claimed' before a model runs, 'applied' after. --#}
{% macro _mirror_batches_table() %}
    {{ return(lakemirror._control_table(
        'mirror_batches',
        'relation_name string, invocation_id string, kind string, batch_end bigint, '
        ~ 'recorded_at string')) }}
{% endmacro %}

{#-- 'schema.table' of the running mirror model in mirror_batches: its warehouse schema, without
     the catalog's schema suffix, as lakemirror's status and maintenance read it. --#}
{% macro _mirror_relation_name() %}
    {{ return(lakemirror._warehouse_schema(this.schema) ~ '.' ~ this.identifier) }}
{% endmacro %}
