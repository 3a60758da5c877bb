{#-- Rewrite a Delta table so it has exactly `columns` (dbt Column objects), in that order:
     existing columns cast to the given type, missing ones NULL of that type. Used to remove
     columns and change types, which Delta without column mapping cannot do in place. A
     `create or replace` at the table's own location reads the previous version, so the
     table's Delta history (and time travel) is kept. Partitioning and tblproperties follow
     the running model's config, as when dbt-spark created the table. On Delta Lake on Spark,
     a table with the typeWidening feature enabled is changed in place instead when every
     change is a widening Delta can apply (ALTER COLUMN TYPE, metadata only) or a new column
     at the end; a table with both changeDataFeed and columnMapping, which Delta cannot
     replace, fails with a clear message. --#}
{% macro rewrite_columns(relation, columns) %}
    {{ return(adapter.dispatch('rewrite_columns', 'lakemirror')(relation, columns)) }}
{% endmacro %}

{% macro default__rewrite_columns(relation, columns) %}
    {{ exceptions.raise_compiler_error(
        "lakemirror.rewrite_columns(" ~ relation ~ "): rewriting a table's columns needs Delta "
        ~ "on Spark, got adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{% macro spark__rewrite_columns(relation, columns) %}
    {%- if lakemirror._feed_through_delta_rs() -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": "
            ~ lakemirror.delta_engine_capabilities().engine ~ " cannot rewrite the columns of "
            ~ relation ~ " (a type widened, or a column removed), whose change data feed is "
            ~ "on; nothing was written. Run this model on "
            ~ lakemirror.delta_engine_capabilities().elsewhere ~ ".") }}
    {%- endif -%}
    {%- if columns | length == 0 -%}
        {{ exceptions.raise_compiler_error(
            "lakemirror.rewrite_columns(" ~ relation ~ "): a table needs at least one column.") }}
    {%- endif -%}
    {%- set existing = adapter.get_columns_in_relation(relation)
        | map(attribute='name') | map('lower') | list -%}
    {%- set values = [] -%}
    {%- for column in columns -%}
        {%- set value = lakemirror.quote_identifier(column.name)
            if column.name | lower in existing else 'null' -%}
        {%- do values.append('cast(' ~ value ~ ' as ' ~ column.data_type ~ ') as '
            ~ lakemirror.quote_identifier(column.name)) -%}
    {%- endfor -%}
    {%- if lakemirror.engine_capabilities().alter_column_type
        and lakemirror._retype_in_place(relation, columns) -%}
        {{ return(none) }}
    {%- endif -%}
    {#-- Sail's create or replace keeps the old schema unless the write may overwrite it. --#}
    {%- set options = "options ('overwriteSchema' = 'true')"
        if lakemirror.engine_capabilities().replace_keeps_schema else '' -%}
    {% call statement('rewrite_columns') -%}
        create or replace table {{ relation }}
        using delta
        {{ options }}
        {{ partition_cols(label='partitioned by') }}
        location '{{ lakemirror._sql_escape(lakemirror._table_location(relation)) }}'
        {{ tblproperties_clause() }}
        as select {{ values | join(', ') }}
        from {{ relation }}
    {%- endcall %}
{% endmacro %}

{#-- Delta Lake on Spark: apply `columns` to `relation` without rewriting it when the table has
     typeWidening enabled and each change is a Delta type widening or a column added at the
     end; returns whether it did. Refuses a table with both changeDataFeed and columnMapping,
     which Delta cannot rewrite either. --#}
{% macro _retype_in_place(relation, columns) %}
    {%- set state = lakemirror.read_delta_state(lakemirror._table_location(relation)) -%}
    {%- set settings = state.configuration -%}
    {%- set widening = settings.get('delta.enableTypeWidening', '') | lower == 'true' -%}
    {%- set existing = adapter.get_columns_in_relation(relation) -%}
    {%- set retyped = [] -%}
    {%- set plan = {'in_place': widening and columns | length >= existing | length} -%}
    {%- for column in existing if plan.in_place -%}
        {%- set wanted = columns[loop.index0] -%}
        {%- if wanted.name | lower != column.name | lower -%}
            {%- do plan.update({'in_place': false}) -%}
        {%- elif wanted.data_type | lower != column.data_type | lower -%}
            {%- if lakemirror._delta_widens(column.data_type, wanted.data_type) -%}
                {%- do retyped.append(wanted) -%}
            {%- else -%}
                {%- do plan.update({'in_place': false}) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not plan.in_place -%}
        {%- if settings.get('delta.enableChangeDataFeed', '') | lower == 'true'
            and settings.get('delta.columnMapping.mode', 'none') | lower != 'none' -%}
            {{ exceptions.raise_compiler_error("lakemirror: " ~ relation ~ " has both "
                ~ "changeDataFeed and columnMapping, and Delta Lake cannot rewrite such a table "
                ~ "(DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION) to drop a column or change a "
                ~ "type. Turn on typeWidening for widenings, or drop one of the two features.") }}
        {%- endif -%}
        {{ return(false) }}
    {%- endif -%}
    {%- for column in retyped -%}
        {% call statement('widen_column') -%}
            alter table {{ relation }} alter column {{ lakemirror.quote_identifier(column.name) }}
            type {{ column.data_type }}
        {%- endcall %}
    {%- endfor -%}
    {%- do lakemirror.add_columns(relation, columns[existing | length:]) -%}
    {{ return(true) }}
{% endmacro %}

{#-- Whether Delta Lake 4.0's typeWidening changes a column from one Spark type to the other in
     place: along tinyint → smallint → int → bigint, those integers and float to double,
     decimal to at least as many digits before and after the point, date to timestamp_ntz. --#}
{% macro _delta_widens(old_type, new_type) %}
    {%- set old_type, new_type = old_type | lower, new_type | lower -%}
    {%- set integers = ['tinyint', 'smallint', 'int', 'bigint'] -%}
    {%- if old_type in integers and new_type in integers -%}
        {{ return(integers.index(old_type) < integers.index(new_type)) }}
    {%- endif -%}
    {%- if new_type == 'double' and old_type in ['tinyint', 'smallint', 'int', 'float'] -%}
        {{ return(true) }}
    {%- endif -%}
    {%- if old_type == 'date' and new_type == 'timestamp_ntz' -%}
        {{ return(true) }}
    {%- endif -%}
    {%- set old_digits = lakemirror._decimal_digits(old_type) -%}
    {%- set new_digits = lakemirror._decimal_digits(new_type) -%}
    {{ return(old_digits is not none and new_digits is not none
              and new_digits.scale >= old_digits.scale and new_digits.whole >= old_digits.whole) }}
{% endmacro %}
