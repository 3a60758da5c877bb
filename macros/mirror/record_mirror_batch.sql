{#-- Post-hook of mirror models: the claimed batch is applied. A crash before this line only
     means the next run re-applies the batch, which the MERGE makes a no-op. --#}
{% macro record_mirror_batch() %}
    {{ return(adapter.dispatch('record_mirror_batch', 'lakemirror')()) }}
{% endmacro %}

{#-- A blind append: the claimed batch end is read first, in its own statement, so the insert
     reads nothing of mirror_batches and never conflicts with another model's bookkeeping. --#}
{% macro default__record_mirror_batch() %}
    {%- set batches = lakemirror._mirror_batches_table() -%}
    {%- set relation_name = lakemirror._sql_escape(lakemirror._mirror_relation_name()) -%}
    {%- set claimed = run_query(
        'select max(batch_end) from ' ~ batches ~ " where relation_name = '" ~ relation_name
        ~ "' and invocation_id = '" ~ invocation_id ~ "' and kind = 'claimed'"
    ).columns[0].values()[0] if execute else none -%}
    {%- if claimed is not none %}
    insert into {{ batches }}
    values (
        '{{ relation_name }}',
        '{{ invocation_id }}',
        'applied',
        {{ claimed | int }},
        cast(current_timestamp() as string)
    )
    {%- endif %}
{% endmacro %}
