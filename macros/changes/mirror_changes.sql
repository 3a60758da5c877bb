{#-- The changes of a mirrored table since the calling model's last recorded build, as a
     relation: the mirror's columns plus _lm_change ('upsert' or 'delete'). An upsert is a
     mirror row written after that build; a delete is a key deleted since and absent from the
     mirror now (key columns and the delete's position, other columns NULL). On a first build
     or a full refresh: the mirror's current state, every row an upsert. Reads through the
     mirror's applied batch end, which a post-hook records for the next build. --#}
{% macro mirror_changes(mirror) %}
    {{ return(adapter.dispatch('mirror_changes', 'lakemirror')(mirror)) }}
{% endmacro %}

{% macro default__mirror_changes(mirror) %}
    {%- do config(post_hook=['{{ lakemirror.record_change_watermarks() }}']) -%}
    {%- if not execute -%}
        {{ return('(select * from ' ~ mirror ~ ')') }}
    {%- endif -%}
    {%- set upstream = lakemirror._mirror_node(mirror) -%}
    {%- set bounds = lakemirror._change_bounds(upstream) -%}
    {%- set columns = lakemirror._column_names(mirror) -%}
    {%- set quoted = lakemirror._quoted_identifiers(columns) -%}
    {%- set changes -%}
        (
            select {{ quoted | join(', ') }}, 'upsert' as _lm_change
            from {{ mirror }}
            where _lm_position > {{ bounds.start }} and _lm_position <= {{ bounds.end }}
            {%- if bounds.start > 0 and upstream['keys'] %}
            union all
            {{ lakemirror._mirror_deletes(mirror, upstream, bounds, columns) }}
            {%- endif %}
        )
    {%- endset -%}
    {%- do bounds.update({'keys': upstream['keys'], 'changes': changes}) -%}
    {{ return(changes) }}
{% endmacro %}

{#-- One row per key deleted between the bounds and absent from the mirror: its key columns
     and the position of its last delete, the other columns NULL. Every delete takes effect
     without a conditional update column, so a row of a key deleted after the start was
     written after the start: only those rows are read (their files' position statistics skip
     the others). With one, a delete may be skipped and the key keep an older row. --#}
{% macro _mirror_deletes(mirror, upstream, bounds, columns) %}
    {%- set keys = lakemirror._quoted_identifiers(upstream['keys']) -%}
    {%- set selected = [] -%}
    {%- for column in columns -%}
        {%- set name = lakemirror.quote_identifier(column) -%}
        {%- if column == '_lm_position' -%}
            {%- do selected.append('deleted._lm_position') -%}
        {%- elif column in upstream['keys'] -%}
            {%- do selected.append('deleted.' ~ name) -%}
        {%- else -%}
            {%- do selected.append('null as ' ~ name) -%}
        {%- endif -%}
    {%- endfor -%}
    select {{ selected | join(', ') }}, 'delete' as _lm_change
    from (
        select {{ keys | join(', ') }}, max(_lm_position) as _lm_position
        from {{ upstream['staging'] }}
        where
            __rowMarker__ = {{ lakemirror.row_marker('delete') }}
            and _lm_position > {{ bounds.start }} and _lm_position <= {{ bounds.end }}
        group by {{ keys | join(', ') }}
    ) as deleted
    left anti join (
        select {{ keys | join(', ') }} from {{ mirror }}
        {%- if upstream['conditional'] is none %}
        where _lm_position > {{ bounds.start }}
        {%- endif %}
    ) as present
        on {{ lakemirror._keys_match('deleted', 'present', upstream['keys']) }}
{% endmacro %}
