{#-- The embedded engine's catalog shows no columns for an attached Delta table, so read the
     columns from the table itself: names from a zero-row select, types from typeof() in one
     flat stack() (a union per column nests the plan so deep that a wide table crashes the
     engine). The rows have DESCRIBE's shape (col_name, data_type, comment), in the table's
     column order, for dbt-spark's parser. --#}
{% macro spark__get_columns_in_relation_raw(relation) -%}
    {%- if lakemirror.engine_capabilities().catalog_describes_attached_columns -%}
        {% call statement('get_columns_in_relation_raw', fetch_result=True) -%}
            describe extended {{ relation }}
        {% endcall %}
        {% do return(load_result('get_columns_in_relation_raw').table) %}
    {%- endif -%}
    {%- set names = lakemirror._column_names(relation) -%}
    {%- if names | length == 0 -%}
        {% do return(run_query("select '' as col_name, '' as data_type, '' as comment limit 0")) %}
    {%- endif -%}
    {%- set described = [] -%}
    {%- for column in lakemirror._quoted_identifiers(names) -%}
        {%- do described.append(loop.index ~ ", '" ~ lakemirror._sql_escape(names[loop.index0])
            ~ "', typeof(" ~ column ~ ')') -%}
    {%- endfor -%}
    {%- set probe -%}
        with probe as (
            select source.* from (select 1 as one) as anchor
            left join (select * from {{ relation }} limit 1) as source on true
        ),

        described as (
            select stack({{ names | length }}, {{ described | join(', ') }})
                as (position, col_name, data_type)
            from probe
        )

        {#-- a generator's rows keep no order: the table's column order comes from position. --#}
        select col_name, data_type, cast(null as string) as comment
        from described
        order by position
    {%- endset -%}
    {% call statement('get_columns_in_relation_raw', fetch_result=True) -%}
        {{ probe }}
    {% endcall %}
    {% do return(load_result('get_columns_in_relation_raw').table) %}
{% endmacro %}
