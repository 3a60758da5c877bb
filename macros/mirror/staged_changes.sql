{#-- The body of a mirror model. Incremental runs return the raw changes after the applied
     watermark up to this run's claimed batch end (the `mirror` strategy collapses and MERGEs
     them); the first run (or --full-refresh) returns the collapsed current state. --#}
{% macro staged_changes(staging) %}
    {{ return(adapter.dispatch('staged_changes', 'lakemirror')(staging)) }}
{% endmacro %}

{% macro default__staged_changes(staging) %}
    {%- set batches = lakemirror._mirror_batches_table() if execute else '_lakemirror_control.mirror_batches' -%}
    {%- set relation_name = this.schema ~ '.' ~ this.identifier -%}
    {%- set claimed -%}
        (
            select max(batch_end) from {{ batches }}
            where relation_name = '{{ relation_name }}'
                and invocation_id = '{{ invocation_id }}' and kind = 'claimed'
        )
    {%- endset -%}
    {%- if is_incremental() -%}
        select * from {{ staging }}
        where
            _lm_position > (
                select coalesce(max(batch_end), 0) from {{ batches }}
                where relation_name = '{{ relation_name }}' and kind = 'applied'
            )
            and _lm_position <= {{ claimed }}
    {%- else -%}
        {%- set data_columns = lakemirror._data_columns(staging) -%}
        {%- set changes = '(select * from ' ~ staging ~ ' where _lm_position <= ' ~ claimed ~ ')' -%}
        select
            {% for column in data_columns -%}
            {{ adapter.quote(column) }},
            {% endfor -%}
            _lm_position
        from ({{ lakemirror.mirror_actions_sql(changes, config.get('unique_key') or [], data_columns) }}) as actions
        where _lm_action = 'write'
    {%- endif -%}
{% endmacro %}
