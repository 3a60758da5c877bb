{#-- Helpers that write a model's rows into its table by column name, never by position. Names
     match case-insensitively, as Spark resolves them. --#}

{#-- The columns of `columns` that `others` lack. --#}
{% macro _columns_missing_from(columns, others) %}
    {%- set names = others | map(attribute='name') | map('lower') | list -%}
    {%- set missing = [] -%}
    {%- for column in columns if column.name | lower not in names -%}
        {%- do missing.append(column) -%}
    {%- endfor -%}
    {{ return(missing) }}
{% endmacro %}

{#-- One value per target column, in target order: the source's column of that name, or a NULL
     of the column's type when the source lacks it (made writable first, see allow_nulls). --#}
{% macro _by_name_values(target, target_columns, source_columns, prefix='') %}
    {%- set missing = lakemirror._columns_missing_from(target_columns, source_columns) -%}
    {%- if missing -%}
        {%- do lakemirror.allow_nulls(target, missing) -%}
        {%- do lakemirror._reattach(target, lakemirror._table_location(target)) -%}
    {%- endif -%}
    {%- set missing_names = missing | map(attribute='name') | list -%}
    {%- set values = [] -%}
    {%- for column in target_columns -%}
        {%- if column.name in missing_names -%}
            {%- do values.append('cast(null as ' ~ column.data_type ~ ')') -%}
        {%- else -%}
            {%- do values.append(prefix ~ lakemirror.quote_identifier(column.name)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(values) }}
{% endmacro %}

{#-- `select <every target column by name> from <source>`, for insert into / insert overwrite. --#}
{% macro _select_by_name(target, source) %}
    {%- set target_columns = adapter.get_columns_in_relation(target) -%}
    {%- set values = lakemirror._by_name_values(
        target, target_columns, adapter.get_columns_in_relation(source)) -%}
    {%- set items = [] -%}
    {%- for column in target_columns -%}
        {%- do items.append(
            values[loop.index0] ~ ' as ' ~ lakemirror.quote_identifier(column.name)) -%}
    {%- endfor -%}
    select {{ items | join(', ') }} from {{ source }}
{% endmacro %}
