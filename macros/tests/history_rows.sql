{#-- Generic test of a history table, in one statement: `_lm_valid_from` is never NULL nor shared
     by two versions, `_lm_is_current` and `_lm_is_deleted` never NULL. --#}
{% test history_rows(model) %}
    {{ adapter.dispatch('test_history_rows', 'lakemirror')(model) }}
{% endtest %}

{% macro default__test_history_rows(model) %}
{{ lakemirror._position_problems(model, '_lm_valid_from', [
    ('null _lm_is_current', ['_lm_is_current']),
    ('null _lm_is_deleted', ['_lm_is_deleted'])]) }}
{% endmacro %}
