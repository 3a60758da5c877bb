{#-- A zero-row MERGE WITH SCHEMA EVOLUTION whose source has `columns` as typed NULLs: adds the
     columns the table lacks and makes the named columns nullable, in one metadata-only commit;
     commits nothing when the schema would not change. A model whose writes go to delta-rs
     (_feed_through_delta_rs) asks for the same as a metadata commit. --#}
{% macro _evolve_schema(relation, columns) %}
    {%- set nulls = [] -%}
    {%- for column in columns -%}
        {%- do nulls.append('cast(null as ' ~ column.data_type ~ ') as '
            ~ lakemirror.quote_identifier(column.name)) -%}
    {%- endfor -%}
    {%- if lakemirror._feed_through_delta_rs() -%}
        {% call statement('evolve_schema') -%}
            {{ lakemirror._delta_rs_request({
                'write': 'metadata', 'table': lakemirror._table_location(relation),
                'columns': 'select ' ~ nulls | join(', ') ~ ' where false',
                'all_nullable': true, 'operation': 'ADD COLUMNS'}) }}
        {%- endcall %}
        {%- do lakemirror._reattach(relation, lakemirror._table_location(relation)) -%}
        {{ return(none) }}
    {%- endif -%}
    {% call statement('evolve_schema') -%}
        merge with schema evolution into {{ relation }} as target
        using (select {{ nulls | join(', ') }} where false) as source
        on false
        when not matched then insert *
    {%- endcall %}
{% endmacro %}
