{#-- MERGE a batch of history rows (see staged_history) into a history table. A 'version' row
     is inserted once, matched by its key and valid-from position; a 'close' row ends the key's
     open versions from earlier batches (valid from before the key's first change in this
     batch). Only an open version is ever ended, so a batch applied twice, or an older batch
     applied after a newer one, changes nothing. --#}
{% macro mirror_history_merge_sql(target, changes, key_columns, data_columns) %}
    {{ return(adapter.dispatch('mirror_history_merge_sql', 'lakemirror')(
        target, changes, key_columns, data_columns)) }}
{% endmacro %}

{% macro default__mirror_history_merge_sql(target, changes, key_columns, data_columns) %}
    {%- set inserted = [] -%}
    {%- for column in lakemirror._history_columns(data_columns) -%}
        {%- do inserted.append([column, 'source.' ~ column]) -%}
    {%- endfor -%}
    {%- set on -%}
        {{ lakemirror._keys_match('target', 'source', key_columns) }}
        and (
            case
                when source._lm_action = 'close'
                    then target._lm_valid_to is null
                    and target._lm_valid_from < source._lm_first_change
                else target._lm_valid_from = source._lm_valid_from
            end
        )
    {%- endset -%}
    {{ return(lakemirror._merge_statement(target, 'select * from ' ~ changes, on, [
        {'when': 'matched', 'then': 'update',
         'if': 'target._lm_valid_to is null and source._lm_valid_to is not null',
         'set': [['_lm_valid_to', 'source._lm_valid_to'], ['_lm_is_current', 'false'],
                 ['_lm_is_deleted', 'source._lm_is_deleted']]},
        {'when': 'not_matched', 'if': "source._lm_action = 'version'", 'then': 'insert',
         'set': inserted}])) }}
{% endmacro %}
