{#-- A zero-row MERGE WITH SCHEMA EVOLUTION whose source has `columns` as typed NULLs: adds the
     columns the table lacks and makes the named columns nullable, in one metadata-only commit;
     commits nothing when the schema would not change. --#}
{% macro _evolve_schema(relation, columns) %}
    {%- set nulls = [] -%}
    {%- for column in columns -%}
        {%- do nulls.append('cast(null as ' ~ column.data_type ~ ') as '
            ~ lakemirror.quote_identifier(column.name)) -%}
    {%- endfor -%}
    {% call statement('evolve_schema') -%}
        merge with schema evolution into {{ relation }} as target
        using (select {{ nulls | join(', ') }} where false) as source
        on false
        when not matched then insert *
    {%- endcall %}
{% endmacro %}
