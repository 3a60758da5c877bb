{#-- dbt-spark's insert_overwrite strategy, inserting by column name (see get_insert_into_sql). --#}
{% macro get_insert_overwrite_sql(source_relation, target_relation, existing_relation) %}
    {%- set iceberg = existing_relation.is_iceberg -%}
    {%- set select_by_name = lakemirror._select_by_name(target_relation, source_relation) -%}
    insert overwrite {{ '' if iceberg else 'table' }} {{ target_relation }}
    {{ '' if iceberg else partition_cols(label='partition') }}
    {{ select_by_name }}
{% endmacro %}
