{#-- The batch a mirror-strategy model (mirror or history) reads, as SQL scalar subqueries over
     mirror_batches for this model's relation: `claimed`, the batch end its pre-hook claimed in
     this invocation; `applied`, its applied watermark (0 before its first batch). --#}
{% macro _mirror_batch_bounds() %}
    {%- set batches = lakemirror._mirror_batches_table() if execute
        else lakemirror.catalog_schema('_lakemirror_control') ~ '.mirror_batches' -%}
    {%- set relation_name = "'"
        ~ lakemirror._sql_escape(lakemirror._mirror_relation_name()) ~ "'" -%}
    {%- set claimed -%}
        (
            select max(batch_end) from {{ batches }}
            where relation_name = {{ relation_name }}
                and invocation_id = '{{ invocation_id }}' and kind = 'claimed'
        )
    {%- endset -%}
    {%- set applied -%}
        (
            select coalesce(max(batch_end), 0) from {{ batches }}
            where relation_name = {{ relation_name }} and kind = 'applied'
        )
    {%- endset -%}
    {{ return({'claimed': claimed, 'applied': applied}) }}
{% endmacro %}
