{#-- dbt-spark's seed table, created with `create or replace` for Delta: seeds live at a fixed
     location, and dropping an external table keeps its files, so a plain `create table` would
     attach the old rows and the seed would load twice (spark__reset_csv_table keeps the table
     for this replace: on Spark, a replace after a drop attaches them too). --#}
{% macro spark__create_csv_table(model, agate_table) %}
    {%- do lakemirror._delta_only_on_embedded() -%}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set quote_seed_column = model['config'].get('quote_columns', None) -%}
    {%- set create = 'create or replace table' if config.get('file_format') == 'delta'
        else 'create table' -%}
    {% set sql %}
        {{ create }} {{ this.render() }} (
            {%- for col_name in agate_table.column_names -%}
                {%- set inferred_type = adapter.convert_type(agate_table, loop.index0) -%}
                {%- set type = column_override.get(col_name, inferred_type) -%}
                {{ adapter.quote_seed_column(col_name | string, quote_seed_column) }} {{ type }}
                {%- if not loop.last -%}, {%- endif -%}
            {%- endfor -%}
        )
        {{ file_format_clause() }}
        {{ partition_cols(label="partitioned by") }}
        {{ clustered_cols(label="clustered by") }}
        {{ location_clause() }}
        {{ comment_clause() }}
    {% endset %}
    {% call statement('_') -%}
        {{ sql }}
    {%- endcall %}
    {{ return(sql) }}
{% endmacro %}
