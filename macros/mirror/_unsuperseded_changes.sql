{#-- A batch of changes without what a later staged change already supersedes. A key with an
     applicable update, delete or upsert staged after the batch end keeps only the removal of
     its older rows from this batch: its inserts are dropped and its updates and upserts become
     deletes. The later change removes those rows anyway, so the final state is the same; and
     when another job applied that later change but has not yet recorded it (two dbt jobs, or
     a job and an ingest, at once), re-applying this older batch cannot bring a deleted or
     replaced row back. --#}
{% macro _unsuperseded_changes(batch, staging, batch_end, keys, conditional_column) %}
    {%- set later = lakemirror._applicable_changes(
        staging, '9223372036854775807', keys, conditional_column) -%}
    {%- set insert_marker = lakemirror.row_marker('insert') -%}
    {%- set replacing_markers = lakemirror.replacing_row_markers() -%}
    select
        {% for column in lakemirror._quoted_identifiers(lakemirror._data_columns(
            staging, lakemirror._staging_columns(staging))) -%}
        batch.{{ column }},
        {% endfor -%}
        case
            when superseded._lm_superseded is null then batch.__rowMarker__
            else {{ lakemirror.row_marker('delete') }}
        end as __rowMarker__,
        batch._lm_position
    from {{ batch }} as batch
    left join (
        select distinct
            {% for key in keys -%}
            later.{{ lakemirror.quote_identifier(key) }},
            {% endfor -%}
            true as _lm_superseded
        from {{ later }} as later
        where
            later._lm_position > {{ batch_end }}
            and later.__rowMarker__ in {{ replacing_markers }}
    ) as superseded
        on {% for key in keys -%}
        batch.{{ lakemirror.quote_identifier(key) }}
            <=> superseded.{{ lakemirror.quote_identifier(key) }}
        {%- if not loop.last %} and {% endif %}
        {%- endfor %}
    where superseded._lm_superseded is null or batch.__rowMarker__ != {{ insert_marker }}
{% endmacro %}
