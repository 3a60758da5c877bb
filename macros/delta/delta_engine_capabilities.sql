{#-- What the running engine can do with Delta table settings:
     - isolation_levels: values of delta.isolationLevel its commits accept;
     - writable_features: table features it writes correctly;
     - features_at_create_only: features it can turn on only when it creates a table;
     - legacy_protocols: whether it honours delta.minReaderVersion / delta.minWriterVersion,
       so a set of old features can stay on a legacy protocol (else table features, writer 7);
     - drop_feature: whether it runs ALTER TABLE ... DROP FEATURE;
     - elsewhere: where to run a model that needs a feature it cannot write (none: not
       named). --#}
{% macro delta_engine_capabilities() %}
    {%- set engine = lakemirror.engine_name() -%}
    {%- set every_feature = lakemirror.delta_feature_catalog().keys() | list -%}
    {%- if engine == 'sail' -%}
        {#-- Measured on pysail 0.7.2: it refuses changeDataFeed (every write to a table
             whose change data feed is on, on a legacy protocol or listed, fails at its
             commit), rowTracking and domainMetadata, cannot fill generated or identity
             columns, and corrupts a table when column mapping is turned on after creation.
             It stores delta.minReaderVersion as a plain property without upgrading the
             protocol. A mirror or apply_changes model's writes to a table whose feed is on
             go to delta-rs, which writes the feed (see _feed_through_delta_rs). --#}
        {{ return({
            'engine': 'the embedded engine (Sail)',
            'isolation_levels': ['Serializable', 'WriteSerializable'],
            'writable_features': ['appendOnly', 'invariants', 'checkConstraints', 'columnMapping',
                                  'deletionVectors', 'timestampNtz', 'typeWidening']
                + (['changeDataFeed'] if lakemirror._hands_feed_writes() else []),
            'features_at_create_only': ['columnMapping'],
            'legacy_protocols': false,
            'drop_feature': false,
            'elsewhere': 'a Delta Lake on Spark target (spark or connect) or Databricks'}) }}
    {%- elif engine == 'databricks' -%}
        {{ return({
            'engine': 'Databricks',
            'isolation_levels': ['Serializable', 'WriteSerializable'],
            'writable_features': every_feature,
            'features_at_create_only': [],
            'legacy_protocols': true,
            'drop_feature': true,
            'elsewhere': none}) }}
    {%- else -%}
        {#-- Measured on Delta Lake 4.0 (Spark 4.0): it validates delta.isolationLevel =
             Serializable; it turns clustering on only through CREATE TABLE ... CLUSTER BY,
             never through a property, and does not know collations-preview. --#}
        {{ return({
            'engine': 'Delta Lake on Spark',
            'isolation_levels': ['Serializable'],
            'writable_features': every_feature | reject('in', ['clustering', 'collations-preview'])
                | list,
            'features_at_create_only': [],
            'legacy_protocols': true,
            'drop_feature': true,
            'elsewhere': none}) }}
    {%- endif -%}
{% endmacro %}
