{#-- dbt-spark's seed loader, with the values written as SQL literals instead of bindings: the
     session method's bindings turn an empty cell into the string 'None' and a boolean into
     'True', which the embedded engine then cannot cast. Literals mean the same to every
     method. --#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set types = [] -%}
    {%- for col_name in agate_table.column_names -%}
        {%- do types.append(column_override.get(
            col_name, adapter.convert_type(agate_table, loop.index0))) -%}
    {%- endfor -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
        {%- set rows = [] -%}
        {%- for row in chunk -%}
            {%- set values = [] -%}
            {%- for value in row -%}
                {%- do values.append('cast(' ~ lakemirror._seed_literal(value) ~ ' as '
                    ~ types[loop.index0] ~ ')') -%}
            {%- endfor -%}
            {%- do rows.append('(' ~ values | join(', ') ~ ')') -%}
        {%- endfor -%}
        {%- set sql = 'insert into ' ~ this.render() ~ ' values ' ~ rows | join(', ') -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- do statements.append(sql) -%}
    {%- endfor -%}
    {{ return(statements[0] if statements else '') }}
{% endmacro %}

{#-- A seed cell as a Spark SQL literal: NULL for an empty cell, true/false, a number as is,
     anything else (text, dates, timestamps) as an escaped string the cast reads. --#}
{% macro _seed_literal(value) %}
    {%- if value is none -%}
        {{ return('null') }}
    {%- elif value is sameas true or value is sameas false -%}
        {{ return(value | string | lower) }}
    {%- elif value is number -%}
        {{ return(value | string) }}
    {%- endif -%}
    {{ return("'" ~ lakemirror._sql_escape(value) ~ "'") }}
{% endmacro %}
