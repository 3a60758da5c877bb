{#-- Pre-hook of mirror models: fix this run's batch end (the last staged change position), so
     the MERGE and the bookkeeping see the same batch while ingestion goes on. --#}
{% macro claim_mirror_batch() %}
    {{ return(adapter.dispatch('claim_mirror_batch', 'lakemirror')()) }}
{% endmacro %}

{% macro default__claim_mirror_batch() %}
    insert into {{ lakemirror._mirror_batches_table() }}
    select
        '{{ lakemirror._sql_escape(lakemirror._mirror_relation_name()) }}',
        '{{ invocation_id }}',
        'claimed',
        coalesce(max(_lm_position), 0),
        cast(current_timestamp() as string)
    from {{ lakemirror._staging_relation() }}
{% endmacro %}
