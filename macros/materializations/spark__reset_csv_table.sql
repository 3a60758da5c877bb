{#-- dbt-spark's seed reload without the drop for a Delta seed table: spark__create_csv_table's
     `create or replace` then replaces it in one commit (readers never find it missing). After
     a drop, Delta on Spark's `create or replace` finds no table in the catalog, creates one
     on the location's existing rows, and the seed would load twice. --#}
{% macro spark__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
    {%- if old_relation and (old_relation.is_view or config.get('file_format') != 'delta') -%}
        {{ adapter.drop_relation(old_relation) }}
    {%- endif -%}
    {{ return(create_csv_table(model, agate_table)) }}
{% endmacro %}
