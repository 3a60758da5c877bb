{#-- dbt-spark's drop of a schema (with its relations), which the relation registry then
     forgets too: else the next session would attach its relations again. A drop made with
     dbt's macros alone, outside a command (no project graph: dbt's test harness cleaning up),
     leaves the registry as it is (see _forget_relations). --#}
{% macro spark__drop_schema(relation) -%}
    {%- do dbt.spark__drop_schema(relation) -%}
    {%- if graph -%}
        {%- do lakemirror._forget_relations(relation.schema) -%}
    {%- endif -%}
{% endmacro %}
