{#-- `dbt run-operation lakemirror.drop_feature --args '{relation: Sales.Orders, feature:
     deletionVectors}'`: removes a table feature so older readers can read the table again.
     Emits ALTER TABLE ... DROP FEATURE [TRUNCATE HISTORY] on engines that have it (Delta Lake
     3.x+ on Spark, Databricks); refuses features Delta cannot drop, and refuses on the
     embedded engine, which has no DROP FEATURE. Says what Delta does next: without
     truncate_history Delta 4.0 drops the feature at once (adding checkpointProtection for a
     feature readers must know); with it, the downgrade takes two runs of this operation. --#}
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
    {%- if feature not in engine.writable_features -%}
        {{ exceptions.raise_compiler_error("lakemirror.drop_feature: " ~ engine.engine
            ~ " does not know the table feature '" ~ feature ~ "', so it cannot drop it.") }}
    {%- endif -%}
    {%- if feature == 'checkpointProtection' and not truncate_history -%}
        {{ exceptions.raise_compiler_error("lakemirror.drop_feature: Delta drops "
            ~ "checkpointProtection only with its history: pass truncate_history: true "
            ~ "(the downgrade then takes two runs, see docs/pages/table-settings.md).") }}
    {%- endif -%}
    {%- set parts = relation.split('.') -%}
    {%- set target_relation = api.Relation.create(
        schema=parts[0] if parts | length > 1 else target.schema, identifier=parts[-1]) -%}
    {%- set location = lakemirror._table_location(target_relation) -%}
    {#-- An operation runs no on-run-start hook: attach the schema's tables here. --#}
    {%- do lakemirror.attach_relations(target_relation.schema) -%}
    {%- if truncate_history -%}
        {%- set retention = lakemirror.read_delta_state(location).configuration.get(
            'delta.dropFeatureTruncateHistory.retentionDuration', '24 hours') -%}
        {%- do log("lakemirror: " ~ target_relation ~ ": drop feature " ~ feature
            ~ " truncate history. This is Delta's two-step downgrade: the first run turns "
            ~ feature ~ " off and removes it from the table's current version, then stops "
            ~ "with DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD (an error, exit code 1) while "
            ~ "older versions still use it. Run this same operation again once those versions "
            ~ "are older than delta.dropFeatureTruncateHistory.retentionDuration (" ~ retention
            ~ "): it truncates that history and takes " ~ feature ~ " out of the protocol.",
            info=true) -%}
    {%- else -%}
        {%- do log("lakemirror: " ~ target_relation ~ ": drop feature " ~ feature, info=true) -%}
    {%- endif -%}
    {%- call statement('drop_feature') -%}
        alter table {{ target_relation }} drop feature `{{ feature }}`
        {{- ' truncate history' if truncate_history }}
    {%- endcall -%}
    {%- set state = lakemirror.read_delta_state(location) -%}
    {%- do log("lakemirror: " ~ target_relation ~ ": " ~ feature ~ " dropped; protocol now "
        ~ "reader " ~ state.reader ~ " / writer " ~ state.writer ~ " (features: "
        ~ (state.features | sort | join(', ') or 'none') ~ ")"
        ~ ("; checkpointProtection is a writer feature (readers are not affected; writers "
           ~ "older than Delta Lake 4.0 cannot write until it is dropped with truncate_history: "
           ~ "true)" if 'checkpointProtection' in state.features else "")
        ~ ". Remove " ~ feature ~ " from the model's delta_features too, or the next run turns "
        ~ "it on again. `lakemirror doctor --readers ...` says which readers can read it now.",
        info=true) -%}
{% endmacro %}
