{#-- dbt-spark's CREATE TABLE AS SELECT, except where Delta Lake refuses it. Delta 4.0 refuses
     any CREATE (OR REPLACE) TABLE AS SELECT, and any replace, of a table with both
     changeDataFeed and columnMapping (DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION). So such a
     table is created empty with column mapping, its change data feed is turned on, and the
     model's rows are inserted (three commits); a model that would replace one fails first with
     a clear message. The embedded engine creates a table whose feed is on the same way, with
     delta-rs's commits (_create_feed_table_through_delta_rs). --#}
{% macro spark__create_table_as(temporary, relation, compiled_code, language='sql') -%}
    {%- if not temporary -%}
        {%- do lakemirror._delta_only_on_embedded() -%}
        {%- do lakemirror._rebuild_in_place() -%}
    {%- endif -%}
    {%- set cluster_by = '' if temporary else lakemirror.cluster_by_clause() -%}
    {%- if cluster_by and (language != 'sql' or config.get('file_format') != 'delta') -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": cluster_by "
            ~ "needs a SQL model in file_format 'delta'.") }}
    {%- endif -%}
    {%- if not temporary and language == 'sql' and lakemirror._feed_through_delta_rs() -%}
        {{ return(lakemirror._create_feed_table_through_delta_rs(relation, compiled_code)) }}
    {%- endif -%}
    {%- if temporary or language != 'sql' or config.get('file_format') != 'delta'
        or not lakemirror.engine_capabilities().change_data_feed -%}
        {{ return(lakemirror._create_table_as(temporary, relation, compiled_code, language,
                                              cluster_by)) }}
    {%- endif -%}
    {%- set settings = lakemirror.delta_settings() -%}
    {%- if not ('changeDataFeed' in settings.features and 'columnMapping' in settings.features) -%}
        {{ return(lakemirror._create_table_as(temporary, relation, compiled_code, language,
                                              cluster_by)) }}
    {%- endif -%}
    {%- if load_relation(relation) is not none -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": Delta Lake "
            ~ "cannot replace " ~ relation ~ ", which has both changeDataFeed and columnMapping "
            ~ "(DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION), so it cannot be rebuilt as a "
            ~ "`table` model or by --full-refresh. Make the model incremental, or drop one of "
            ~ "the two features.") }}
    {%- endif -%}
    {%- do lakemirror._create_empty_without_feed(relation, compiled_code, settings, cluster_by) -%}
    {%- call statement('enable_change_data_feed') -%}
        alter table {{ relation }} set tblproperties ('delta.enableChangeDataFeed' = 'true')
    {%- endcall -%}
    insert into {{ relation }}
    select * from ({{ compiled_code }}) as lakemirror_source
{%- endmacro %}

{#-- dbt-spark rebuilds a non-Delta table by dropping it and creating it again; the table lives
     at its warehouse location, whose files the drop keeps (an external table), and Spark
     refuses CREATE TABLE AS SELECT into a folder that is not empty. Let it overwrite the folder,
     as a managed table's rebuild would. --#}
{% macro _rebuild_in_place() %}
    {%- if (config.get('file_format') or 'delta') != 'delta'
        and not lakemirror.engine_capabilities().ctas_into_non_empty_location -%}
        {%- do run_query('set spark.sql.legacy.allowNonEmptyLocationInCTAS = true') -%}
    {%- endif -%}
{% endmacro %}

{#-- dbt-spark's CREATE TABLE AS SELECT, with the model's `cluster by` clause when it has one
     (dbt-spark knows only bucketing, `clustered by ... into n buckets`). --#}
{% macro _create_table_as(temporary, relation, compiled_code, language, cluster_by) %}
    {%- if not cluster_by -%}
        {{ return(dbt.spark__create_table_as(temporary, relation, compiled_code, language)) }}
    {%- endif -%}
    {%- if config.get('contract').enforced -%}
        {{ get_assert_columns_equivalent(compiled_code) }}
        {%- set compiled_code = get_select_subquery(compiled_code) -%}
    {%- endif -%}
    create or replace table {{ relation }}
    {{ file_format_clause() }}
    {{ options_clause() }}
    {{ tblproperties_clause() }}
    {{ cluster_by }}
    {{ location_clause() }}
    {{ comment_clause() }}
    as
    {{ compiled_code }}
{% endmacro %}

{#-- A mirror or apply_changes model's new table whose change data feed is on, on an engine
     that hands its writes to delta-rs (see _feed_through_delta_rs): the engine creates it
     empty with the model's other settings, a metadata commit turns the feed on (and makes
     every column nullable, as Delta on Spark's CREATE TABLE AS SELECT does), and delta-rs
     appends the model's rows (three commits; the feed starts at the second). --#}
{% macro _create_feed_table_through_delta_rs(relation, compiled_code) %}
    {%- set settings = lakemirror.delta_settings() -%}
    {%- set refusal = none -%}
    {%- if load_relation(relation) is not none -%}
        {%- set refusal = "cannot replace " ~ relation ~ ", whose change data feed is on, so it "
            ~ "cannot be rebuilt by --full-refresh here" -%}
    {%- elif 'columnMapping' in settings.features -%}
        {%- set refusal = "cannot write a table with both changeDataFeed and columnMapping" -%}
    {%- endif -%}
    {%- if refusal is not none -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": "
            ~ lakemirror.delta_engine_capabilities().engine ~ " " ~ refusal ~ "; nothing was "
            ~ "written. Run this model on " ~ lakemirror.delta_engine_capabilities().elsewhere
            ~ ".") }}
    {%- endif -%}
    {%- do lakemirror._create_empty_without_feed(relation, compiled_code, settings, '') -%}
    {%- set location = lakemirror._table_location(relation) -%}
    {%- call statement('enable_change_data_feed') -%}
        {{ lakemirror._delta_rs_request({
            'write': 'metadata', 'table': location, 'all_nullable': true,
            'set': {'delta.enableChangeDataFeed': 'true'}}) }}
    {%- endcall -%}
    {{ return(lakemirror._delta_rs_request({
        'write': 'append', 'table': location, 'source': compiled_code})) }}
{% endmacro %}

{#-- The model's table, created empty with its settings but the change data feed (turned on by
     the caller's next commit). --#}
{% macro _create_empty_without_feed(relation, compiled_code, settings, cluster_by) %}
    {%- set properties = settings.properties.copy() -%}
    {%- do properties.update(settings.protocol) -%}
    {%- do properties.pop('delta.enableChangeDataFeed', none) -%}
    {%- do properties.pop('delta.feature.changeDataFeed', none) -%}
    {%- call statement('create_before_change_data_feed') -%}
        create table {{ relation }}
        {{ file_format_clause() }}
        {{ lakemirror._tblproperties_sql(properties) }}
        {{ partition_cols(label="partitioned by") }}
        {{ cluster_by }}
        {{ location_clause() }}
        {{ comment_clause() }}
        as select * from ({{ compiled_code }}) as lakemirror_source where false
    {%- endcall -%}
{% endmacro %}
