{#-- Post-hook of mirror models: the claimed batch is applied. A crash before this line only
     means the next run re-applies the batch, which the MERGE makes a no-op. --#}
{% macro record_mirror_batch() %}
    {{ return(adapter.dispatch('record_mirror_batch', 'lakemirror')()) }}
{% endmacro %}

{#-- A blind append: the claimed batch end is read first, in its own statement, so the insert
     reads nothing of mirror_batches and never conflicts with another model's bookkeeping. A
     batch that ends at or before the applied watermark (nothing new for this table) is not
     recorded: the watermark stays what it is either way. --#}
{% macro default__record_mirror_batch() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set batches = lakemirror._mirror_batches_table() -%}
    {%- set relation_name = lakemirror._sql_escape(lakemirror._mirror_relation_name()) -%}
    {%- set bounds = lakemirror._mirror_batch_bounds() -%}
    {%- set claimed, applied = run_query(
        'select ' ~ bounds.claimed ~ ', ' ~ bounds.applied).rows[0] -%}
    {%- if claimed is not none and claimed > applied %}
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
