{#-- Append-only log of mirror batches: 'claimed' before a model runs, 'applied' after. --#}
{% macro _mirror_batches_table() %}
    {{ return(lakemirror._control_table(
        'mirror_batches',
        'relation_name string, invocation_id string, kind string, batch_end bigint, '
        ~ 'recorded_at string')) }}
{% endmacro %}
