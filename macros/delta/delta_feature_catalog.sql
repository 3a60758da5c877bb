{#-- Delta table features lakemirror knows, from Delta's protocol and Databricks' "Delta
     Lake feature compatibility and protocols" table: whether readers must know it too
     ('reader-writer') or only writers ('writer'), the lowest legacy protocol that
     supports it (reader, writer; writer 7 means table features only), the property
     that turns it on, and whether `ALTER TABLE ... DROP FEATURE` can remove it.
     Rendered from python/lakemirror/delta/features.py by
     `python -m lakemirror.generated_macros`: edit it there. --#}
{% macro delta_feature_catalog() %}
    {{ return({
        'appendOnly': {
            'kind': 'writer', 'reader': 1, 'writer': 2, 'property': 'delta.appendOnly',
            'value': 'true', 'droppable': false,
        },
        'invariants': {
            'kind': 'writer', 'reader': 1, 'writer': 2, 'property': none, 'value': none,
            'droppable': false,
        },
        'checkConstraints': {
            'kind': 'writer', 'reader': 1, 'writer': 3, 'property': none, 'value': none,
            'droppable': true,
        },
        'changeDataFeed': {
            'kind': 'writer', 'reader': 1, 'writer': 4, 'property': 'delta.enableChangeDataFeed',
            'value': 'true', 'droppable': false,
        },
        'generatedColumns': {
            'kind': 'writer', 'reader': 1, 'writer': 4, 'property': none, 'value': none,
            'droppable': false,
        },
        'columnMapping': {
            'kind': 'reader-writer', 'reader': 2, 'writer': 5,
            'property': 'delta.columnMapping.mode', 'value': 'name', 'droppable': true,
        },
        'identityColumns': {
            'kind': 'writer', 'reader': 1, 'writer': 6, 'property': none, 'value': none,
            'droppable': false,
        },
        'deletionVectors': {
            'kind': 'reader-writer', 'reader': 3, 'writer': 7,
            'property': 'delta.enableDeletionVectors', 'value': 'true', 'droppable': true,
        },
        'timestampNtz': {
            'kind': 'reader-writer', 'reader': 3, 'writer': 7, 'property': none, 'value': none,
            'droppable': false,
        },
        'typeWidening': {
            'kind': 'reader-writer', 'reader': 3, 'writer': 7,
            'property': 'delta.enableTypeWidening', 'value': 'true', 'droppable': true,
        },
        'v2Checkpoint': {
            'kind': 'reader-writer', 'reader': 3, 'writer': 7, 'property': 'delta.checkpointPolicy',
            'value': 'v2', 'droppable': true,
        },
        'domainMetadata': {
            'kind': 'writer', 'reader': 1, 'writer': 7, 'property': none, 'value': none,
            'droppable': false,
        },
        'rowTracking': {
            'kind': 'writer', 'reader': 1, 'writer': 7, 'property': 'delta.enableRowTracking',
            'value': 'true', 'droppable': false,
        },
        'vacuumProtocolCheck': {
            'kind': 'reader-writer', 'reader': 3, 'writer': 7, 'property': none, 'value': none,
            'droppable': true,
        },
        'variantType': {
            'kind': 'reader-writer', 'reader': 3, 'writer': 7, 'property': none, 'value': none,
            'droppable': false,
        },
        'inCommitTimestamp': {
            'kind': 'writer', 'reader': 1, 'writer': 7,
            'property': 'delta.enableInCommitTimestamps', 'value': 'true', 'droppable': true,
        },
        'clustering': {
            'kind': 'writer', 'reader': 1, 'writer': 7, 'property': none, 'value': none,
            'droppable': false,
        },
        'collations-preview': {
            'kind': 'writer', 'reader': 1, 'writer': 7, 'property': none, 'value': none,
            'droppable': true,
        },
        'checkpointProtection': {
            'kind': 'writer', 'reader': 1, 'writer': 7, 'property': none, 'value': none,
            'droppable': true,
        },
    }) }}
{% endmacro %}
