{#-- Post-hook of mirror models: the claimed batch is applied. A crash before this line only
     means the next run re-applies the batch, which the MERGE makes a no-op. --#}
{% macro record_mirror_batch() %}
    {{ return(adapter.dispatch('record_mirror_batch', 'lakemirror')()) }}
{% endmacro %}

{% macro default__record_mirror_batch() %}
    {%- set batches = lakemirror._mirror_batches_table() -%}
    insert into {{ batches }}
    select relation_name, invocation_id, 'applied', batch_end, cast(current_timestamp() as string)
    from {{ batches }}
    where
        relation_name = '{{ lakemirror._sql_escape(this.schema ~ '.' ~ this.identifier) }}'
        and invocation_id = '{{ invocation_id }}'
        and kind = 'claimed'
{% endmacro %}
