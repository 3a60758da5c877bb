{#-- dbt-spark's drop of a schema (with its relations), which the relation registry then
     forgets too: else the next session would attach its relations again. --#}
{% macro spark__drop_schema(relation) -%}
    {%- do dbt.spark__drop_schema(relation) -%}
    {%- do lakemirror._forget_relations(relation.schema) -%}
{% endmacro %}
