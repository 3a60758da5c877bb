{#-- The failing rows of a mirror or history test, from one aggregation of the table: one row
     per value of the position column in trouble, with `problem` naming what is wrong there:
     'null <position>', 'duplicate <position>' (several rows hold it), and the label of each
     of `null_checks` ((label, columns) pairs) some row of which has NULL in one of its columns
     (names quoted with lakemirror.quote_identifier). `rows_at_position` counts the rows. --#}
{% macro _position_problems(model, position, null_checks) %}
{%- set position_column = lakemirror.quote_identifier(position) -%}
select *
from (
    select
        concat_ws(
            ', ',
            case when {{ position_column }} is null then 'null {{ position }}' end,
            case
                when {{ position_column }} is not null and count(*) > 1
                    then 'duplicate {{ position }}'
            end
            {%- for label, columns in null_checks if columns %},
            case
                when max(case when
                    {%- for column in columns %} {{ lakemirror.quote_identifier(column) }} is null
                    {%- if not loop.last %} or{% endif %}{% endfor %} then 1 else 0 end) = 1
                    then '{{ label }}'
            end
            {%- endfor %}
        ) as problem,
        {{ position_column }},
        count(*) as rows_at_position
    from {{ model }}
    group by {{ position_column }}
) as checked
where problem != ''
{% endmacro %}
