{#-- The body of a history model (SCD type 2, docs/pages/history.md): one row
     per version of a key, from the staged changes that take effect (a change a
     ConditionalUpdateColumn skips makes no version). An insert, update or upsert at position p
     opens a version valid from p; the key's next update, upsert or delete ends it (valid to
     that change's position; ended by a delete: _lm_is_deleted). An insert ends nothing: as in
     the mirror, a second insert of a key is a second row. The first run (or --full-refresh)
     returns every version up to the claimed batch end; later runs return the versions of the
     changes after the applied watermark ('version' rows) and, per key, the first change that
     ends the versions of earlier batches ('close' rows), which mirror_history_merge_sql
     applies. --#}
{% macro staged_history(staging) %}
    {{ return(lakemirror._kept_mirror_body(
        adapter.dispatch('staged_history', 'lakemirror')(staging))) }}
{% endmacro %}

{% macro default__staged_history(staging) %}
    {%- set keys = config.get('unique_key') or [] -%}
    {%- set keys = [keys] if keys is string else keys -%}
    {%- set quoted_keys = [] -%}
    {%- for key in keys -%}
        {%- do quoted_keys.append(lakemirror.quote_identifier(key)) -%}
    {%- endfor -%}
    {%- set by_key = ('partition by ' ~ quoted_keys | join(', ')) if keys else '' -%}
    {%- set data_columns = lakemirror._data_columns(
        staging, lakemirror._staging_columns(staging)) -%}
    {%- set bounds = lakemirror._mirror_batch_bounds() -%}
    {%- set applicable = lakemirror._applicable_changes(
        staging, bounds.claimed, keys, config.get('conditional_update_column')) -%}
    {%- set incremental = is_incremental() -%}
    {%- set replacing_markers = lakemirror.replacing_row_markers() -%}
    {%- set delete_marker = lakemirror.row_marker('delete') -%}
    {%- set next_end = 'cast(null as bigint)' -%}
    {%- if keys -%}
        {%- set next_end -%}
            min(case when __rowMarker__ in {{ replacing_markers }} then _lm_position end) over (
                {{ by_key }} order by _lm_position
                rows between 1 following and unbounded following
            )
        {%- endset -%}
    {%- endif -%}
    {%- set columns = lakemirror._history_columns(data_columns) -%}
    {%- do columns.extend(['_lm_action', '_lm_first_change'] if incremental else []) -%}
    with changes as (
        select
            applicable.*,
            min(_lm_position) over ({{ by_key }}) as _lm_first_change,
            {{ next_end }} as _lm_next_end,
            row_number() over (
                {{ by_key }} order by __rowMarker__ in {{ replacing_markers }} desc, _lm_position
            ) as _lm_rank
        from {{ applicable }} as applicable
        where _lm_position > {{ bounds.applied if incremental else '0' }}
    ),

    versions as (
        select
            opened.*,
            opened._lm_position as _lm_valid_from,
            opened._lm_next_end as _lm_valid_to,
            opened._lm_next_end is null as _lm_is_current,
            coalesce(ended.__rowMarker__ = {{ delete_marker }}, false) as _lm_is_deleted,
            'version' as _lm_action
        from changes as opened
        left join changes as ended
            on
                {{ lakemirror._keys_match('opened', 'ended', keys) }}
                and opened._lm_next_end = ended._lm_position
        where opened.__rowMarker__ != {{ delete_marker }}
    ),

    closes as (
        select
            changes.*,
            cast(null as bigint) as _lm_valid_from,
            _lm_position as _lm_valid_to,
            false as _lm_is_current,
            __rowMarker__ = {{ delete_marker }} as _lm_is_deleted,
            'close' as _lm_action
        from changes
        where
            _lm_rank = 1
            and __rowMarker__ in {{ replacing_markers }}
            and {{ 'true' if incremental and keys else 'false' }}
    )

    select {{ columns | join(', ') }} from versions
    union all
    select {{ columns | join(', ') }} from closes
{% endmacro %}
