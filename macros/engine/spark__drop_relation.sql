{#-- dbt-spark's drop of a relation, which the relation registry then forgets too: else the next
     session would attach the dropped relation again. --#}
{% macro spark__drop_relation(relation) -%}
    {%- do dbt.spark__drop_relation(relation) -%}
    {%- do lakemirror._forget_relations(relation.schema, relation.identifier) -%}
{% endmacro %}
