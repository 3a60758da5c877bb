{#-- Collapse a batch of changes per key, in change position order, into MERGE actions:
     for each key whose last update/delete/upsert is at position r, one 'remove' row (delete the
     key's rows older than r) and, for an update/upsert, one 'write' row; every insert after r
     (or every insert, when the key has no such change) is a 'write' row. Each action names
     the change position it matches, so one target row matches at most one action. --#}
{% macro mirror_actions_sql(changes, key_columns, data_columns) %}
    {{ return(adapter.dispatch('mirror_actions_sql', 'lakemirror')(
        changes, key_columns, data_columns)) }}
{% endmacro %}

{% macro default__mirror_actions_sql(changes, key_columns, data_columns) %}
    {%- set keys = key_columns if key_columns is not string else [key_columns] -%}
    {%- set quoted_columns = lakemirror._quoted_identifiers(data_columns) -%}
    with changes as (
        select * from {{ changes }}
    ),

    {% if keys | length > 0 -%}
    last_replace as (
        select
            {% for key in keys -%}
            {{ lakemirror.quote_identifier(key) }},
            {% endfor -%}
            max(_lm_position) as _lm_replace_position
        from changes
        where __rowMarker__ in {{ lakemirror.replacing_row_markers() }}
        group by
            {%- for key in keys %} {{ lakemirror.quote_identifier(key) }}
            {%- if not loop.last %},{% endif %}
            {%- endfor %}
    ),

    effective as (
        select
            changes.*,
            last_replace._lm_replace_position
        from changes
        left join last_replace
            on {% for key in keys -%}
            changes.{{ lakemirror.quote_identifier(key) }}
                <=> last_replace.{{ lakemirror.quote_identifier(key) }}
            {%- if not loop.last %} and {% endif %}
            {%- endfor %}
        where
            last_replace._lm_replace_position is null
            or changes._lm_position >= last_replace._lm_replace_position
    )
    {%- else -%}
    effective as (
        select
            changes.*,
            cast(null as bigint) as _lm_replace_position
        from changes
    )
    {%- endif %}

    select
        {% for column in quoted_columns -%}
        {{ column }},
        {% endfor -%}
        _lm_position,
        'remove' as _lm_action
    from effective
    where _lm_position = _lm_replace_position

    union all

    select
        {% for column in quoted_columns -%}
        {{ column }},
        {% endfor -%}
        _lm_position,
        'write' as _lm_action
    from effective
    where __rowMarker__ != {{ lakemirror.row_marker('delete') }}
{% endmacro %}
