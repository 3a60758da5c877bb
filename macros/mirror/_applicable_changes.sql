{#-- Staged changes up to the batch end that take effect. With a conditional update column C,
     an update, upsert or delete whose C is below the key's high-water mark (the largest C of
     any earlier change to the key, over the whole staged history) is skipped; NULL is lowest.
     Every skip decision depends only on earlier changes, so re-applying stays idempotent. --#}
{% macro _applicable_changes(staging, batch_end, keys, conditional_column) %}
    {%- if conditional_column is none -%}
        {{ return('(select * from ' ~ staging ~ ' where _lm_position <= ' ~ batch_end ~ ')') }}
    {%- endif -%}
    {%- set column = lakemirror.quote_identifier(conditional_column) -%}
    {%- set partition = [] -%}
    {%- for key in keys -%}
        {%- do partition.append('history.' ~ lakemirror.quote_identifier(key)) -%}
    {%- endfor -%}
    {%- set query -%}
        (
            select * from (
                select
                    history.*,
                    max(history.{{ column }}) over (
                        partition by {{ partition | join(', ') }}
                        order by history._lm_position
                        rows between unbounded preceding and 1 preceding
                    ) as _lm_high_water
                from {{ staging }} as history
                where history._lm_position <= {{ batch_end }}
            ) as ranked
            where
                __rowMarker__ = {{ lakemirror.row_marker('insert') }}
                or _lm_high_water is null
                or {{ column }} >= _lm_high_water
        )
    {%- endset -%}
    {{ return(query) }}
{% endmacro %}
