{#-- Append-only log of the positions downstream models read their mirrors' changes through:
     one row per model, mirror and successful build. `mirror_since` (when the mirror's first
     batch was recorded) tells a mirror re-created since from the one the position belongs to. --#}
{% macro _change_watermarks_table() %}
    {{ return(lakemirror._control_table(
        'change_watermarks',
        'model_name string, mirror_name string, mirror_since string, position bigint, '
        ~ 'invocation_id string, recorded_at string')) }}
{% endmacro %}
