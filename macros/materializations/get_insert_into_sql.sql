{#-- dbt-spark's append strategy, inserting by column name: a reordered select lands in the
     right columns, and a target column the model no longer selects gets NULL. --#}
{% macro get_insert_into_sql(source_relation, target_relation) %}
    {%- set select_by_name = lakemirror._select_by_name(target_relation, source_relation) -%}
    insert into table {{ target_relation }}
    {{ select_by_name }}
{% endmacro %}
