{#-- Append-only log of mirror batches: 'claimed' before a model runs, 'applied' after. --#}
{% macro _mirror_batches_table() %}
    {%- set location = lakemirror.warehouse_path('_lakemirror', 'control/mirror_batches') -%}
    {%- do run_query('create schema if not exists _lakemirror_control') -%}
    {%- do run_query(
        'create table if not exists _lakemirror_control.mirror_batches '
        ~ '(relation_name string, invocation_id string, kind string, batch_end bigint, '
        ~ 'recorded_at string) '
        ~ "using delta location '" ~ location ~ "'") -%}
    {{ return('_lakemirror_control.mirror_batches') }}
{% endmacro %}
