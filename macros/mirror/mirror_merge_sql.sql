{#-- MERGE a batch of mirror actions into the target. A 'remove' matches the key's rows older
     than its change; a 'write' matches only a row its own change already wrote, so a batch
     applied twice changes nothing (idempotent by construction). --#}
{% macro mirror_merge_sql(target, changes, key_columns, data_columns) %}
    {{ return(adapter.dispatch('mirror_merge_sql', 'lakemirror')(
        target, changes, key_columns, data_columns)) }}
{% endmacro %}

{% macro default__mirror_merge_sql(target, changes, key_columns, data_columns) %}
    {%- set keys = key_columns if key_columns is not string else [key_columns] -%}
    {%- set inserted = [] -%}
    {%- for column in lakemirror._quoted_identifiers(data_columns) + ['_lm_position'] -%}
        {%- do inserted.append([column, 'source.' ~ column]) -%}
    {%- endfor -%}
    {%- set on -%}
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
    {%- endset -%}
    {{ return(lakemirror._merge_statement(
        target, lakemirror.mirror_actions_sql(changes, keys, data_columns), on, [
            {'when': 'matched', 'if': "source._lm_action = 'remove'", 'then': 'delete'},
            {'when': 'not_matched', 'if': "source._lm_action = 'write'", 'then': 'insert',
             'set': inserted}])) }}
{% endmacro %}
