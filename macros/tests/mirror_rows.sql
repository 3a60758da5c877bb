{#-- Generic test of a mirrored table, in one statement: no key column holds NULL ('null key'),
     `_lm_position` is never NULL ('null _lm_position') and never shared by two rows
     ('duplicate _lm_position'). Key names are taken literally, any characters. --#}
{% test mirror_rows(model, keys) %}
    {{ adapter.dispatch('test_mirror_rows', 'lakemirror')(model, keys) }}
{% endtest %}

{% macro default__test_mirror_rows(model, keys) %}
{{ lakemirror._position_problems(model, '_lm_position', [('null key', keys)]) }}
{% endmacro %}
