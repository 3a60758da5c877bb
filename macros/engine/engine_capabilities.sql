{#-- What the running engine's SQL can do where engines differ, one answer per engine (see
     engine_name); macros branch on a flag, never on the engine's name:
     - add_columns: ALTER TABLE ... ADD COLUMNS;
     - alter_column_type: a Delta type widening in place (ALTER COLUMN ... TYPE);
     - show_tblproperties: SHOW TBLPROPERTIES (else the _delta_log is read);
     - change_data_feed: Delta's change data feed;
     - clustering: Delta liquid clustering (CREATE TABLE ... CLUSTER BY, writes to clustered
       tables, OPTIMIZE);
     - non_delta_writes: a write to a table in another format than Delta (csv, parquet, ...);
     - partition_overwrite: insert overwrite of a partition, or dynamic partition overwrite;
     - microbatch: dbt-spark's microbatch strategy (it sets the partition overwrite mode);
     - ctas_into_non_empty_location: CREATE TABLE AS SELECT into a folder holding files
       without spark.sql.legacy.allowNonEmptyLocationInCTAS;
     - ctas_relaxes_nulls: CREATE TABLE AS SELECT makes every column nullable;
     - replace_keeps_schema: CREATE OR REPLACE TABLE keeps the old schema unless the write
       sets overwriteSchema;
     - catalog_describes_attached_columns: DESCRIBE shows an attached Delta table's columns;
     - attached_schema_is_fixed: an attached table keeps the schema it had when attached;
     - catalog_in_session: the catalog lives in each session (not shared by a server's);
     - delta_rs_writes: the session hands lakemirror's write requests to delta-rs
       (engine/delta_rs_writes.py): the embedded engine's, whose session lakemirror makes. --#}
{% macro engine_capabilities() %}
    {{ return(adapter.dispatch('engine_capabilities', 'lakemirror')()) }}
{% endmacro %}

{% macro default__engine_capabilities() %}
    {%- if lakemirror.engine_name() == 'sail' -%}
        {#-- Measured on pysail 0.7.2. --#}
        {{ return({
            'add_columns': false,
            'alter_column_type': false,
            'show_tblproperties': false,
            'change_data_feed': false,
            'clustering': false,
            'non_delta_writes': false,
            'partition_overwrite': false,
            'microbatch': false,
            'ctas_into_non_empty_location': true,
            'ctas_relaxes_nulls': false,
            'replace_keeps_schema': true,
            'catalog_describes_attached_columns': false,
            'attached_schema_is_fixed': true,
            'catalog_in_session': true,
            'delta_rs_writes': adapter.config.credentials.server_side_parameters.get(
                'spark.lakemirror.engine') == 'embedded'}) }}
    {%- endif -%}
    {#-- Delta Lake on Spark (4.0) and Databricks. --#}
    {{ return({
        'add_columns': true,
        'alter_column_type': true,
        'show_tblproperties': true,
        'change_data_feed': true,
        'clustering': true,
        'non_delta_writes': true,
        'partition_overwrite': true,
        'microbatch': true,
        'ctas_into_non_empty_location': false,
        'ctas_relaxes_nulls': true,
        'replace_keeps_schema': false,
        'catalog_describes_attached_columns': true,
        'attached_schema_is_fixed': false,
        'catalog_in_session': false,
        'delta_rs_writes': false}) }}
{% endmacro %}
