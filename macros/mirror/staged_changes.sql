{#-- The body of a mirror model. Incremental runs return the raw changes after the applied
     watermark up to this run's claimed batch end (the `mirror` strategy collapses and MERGEs
     them); the first run (or --full-refresh) returns the collapsed current state. --#}
{% macro staged_changes(staging) %}
    {{ return(lakemirror._kept_mirror_body(
        adapter.dispatch('staged_changes', 'lakemirror')(staging))) }}
{% endmacro %}

{% macro default__staged_changes(staging) %}
    {%- set bounds = lakemirror._mirror_batch_bounds() -%}
    {%- set keys = config.get('unique_key') or [] -%}
    {%- set keys = [keys] if keys is string else keys -%}
    {%- set changes = lakemirror._applicable_changes(
        staging, bounds.claimed, keys, config.get('conditional_update_column')) -%}
    {%- if is_incremental() -%}
        {%- set batch -%}
        (
            select * from {{ changes }} as changes
            where _lm_position > {{ bounds.applied }}
        )
        {%- endset -%}
        {%- if keys -%}
            {{ lakemirror._unsuperseded_changes(batch, staging, bounds.claimed, keys,
                                                config.get('conditional_update_column')) }}
        {%- else -%}
            select * from {{ batch }} as batch
        {%- endif -%}
    {%- else -%}
        {%- set data_columns = lakemirror._data_columns(
            staging, lakemirror._staging_columns(staging)) -%}
        select
            {% for column in data_columns -%}
            {{ lakemirror.quote_identifier(column) }},
            {% endfor -%}
            _lm_position
        from ({{ lakemirror.mirror_actions_sql(changes, keys, data_columns) }}) as actions
        where _lm_action = 'write'
    {%- endif -%}
{% endmacro %}
