{#-- MERGE a batch of mirror actions into the target. A 'remove' matches the key's rows older
     than its change; a 'write' matches only a row its own change already wrote, so a batch
     applied twice changes nothing (idempotent by construction). --#}
{% macro mirror_merge_sql(target, changes, key_columns, data_columns) %}
    {{ return(adapter.dispatch('mirror_merge_sql', 'lakemirror')(
        target, changes, key_columns, data_columns)) }}
{% endmacro %}

{% macro default__mirror_merge_sql(target, changes, key_columns, data_columns) %}
    {%- set keys = key_columns if key_columns is not string else [key_columns] -%}
    {%- set quoted_columns = lakemirror._quoted_identifiers(data_columns) -%}
    merge into {{ target }} as target
    using (
        {{ lakemirror.mirror_actions_sql(changes, keys, data_columns) }}
    ) as source
    on
        {% for key in keys -%}
        target.{{ lakemirror.quote_identifier(key) }}
            <=> source.{{ lakemirror.quote_identifier(key) }} and
        {% endfor -%}
        (
            case
                when source._lm_action = 'remove' then target._lm_position < source._lm_position
                else target._lm_position = source._lm_position
            end
        )
    when matched and source._lm_action = 'remove' then delete
    when not matched and source._lm_action = 'write' then insert (
        {% for column in quoted_columns -%}
        {{ column }},
        {% endfor -%}
        _lm_position
    ) values (
        {% for column in quoted_columns -%}
        source.{{ column }},
        {% endfor -%}
        source._lm_position
    )
{% endmacro %}
