{#-- `dbt run-operation lakemirror.drop_feature --args '{relation: Sales.Orders, feature:
     deletionVectors}'`: removes a table feature so older readers can read the table again.
     Emits ALTER TABLE ... DROP FEATURE [TRUNCATE HISTORY] on engines that have it (Delta Lake
     3.x+ on Spark, Databricks); refuses features Delta cannot drop, and refuses on the
     embedded engine, which has no DROP FEATURE. --#}
{% macro drop_feature(relation, feature, truncate_history=false) %}
    {%- set droppable = [] -%}
    {%- for name, entry in lakemirror.delta_feature_catalog().items() if entry.droppable -%}
        {%- do droppable.append(name) -%}
    {%- endfor -%}
    {%- if feature not in droppable -%}
        {{ exceptions.raise_compiler_error("lakemirror.drop_feature: Delta cannot drop the "
            ~ "table feature '" ~ feature ~ "'. Droppable features: "
            ~ droppable | join(', ') ~ ".") }}
    {%- endif -%}
    {%- set engine = lakemirror.delta_engine_capabilities() -%}
    {%- if not engine.drop_feature -%}
        {{ exceptions.raise_compiler_error("lakemirror.drop_feature: " ~ engine.engine
            ~ " cannot drop table features (it has no ALTER TABLE ... DROP FEATURE). Run this "
            ~ "operation on a target with Delta Lake 3.x or later on Spark, or Databricks, "
            ~ "e.g. dbt run-operation lakemirror.drop_feature --target spark ...") }}
    {%- endif -%}
    {%- set parts = relation.split('.') -%}
    {%- set target_relation = api.Relation.create(
        schema=parts[0] if parts | length > 1 else target.schema, identifier=parts[-1]) -%}
    {%- do log("lakemirror: " ~ target_relation ~ ": drop feature " ~ feature
        ~ (" truncate history" if truncate_history else ""), info=true) -%}
    {%- call statement('drop_feature') -%}
        alter table {{ target_relation }} drop feature `{{ feature }}`
        {{- ' truncate history' if truncate_history }}
    {%- endcall -%}
    {%- do log("lakemirror: remove " ~ feature ~ " from the model's delta_features too, or "
        ~ "the next run turns it on again.", info=true) -%}
{% endmacro %}
