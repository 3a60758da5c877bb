{#-- A Delta table's current properties and protocol. Returns {'configuration': {...},
     'reader': n, 'writer': n, 'features': [...]}, where features are the listed table features
     or those the legacy versions imply. Delta Lake on Spark and Databricks say it in SHOW
     TBLPROPERTIES; the embedded engine has none, so there it is read from the _delta_log. --#}
{% macro read_delta_state(location) %}
    {%- if not lakemirror.engine_capabilities().show_tblproperties -%}
        {{ return(lakemirror._read_delta_log_state(location)) }}
    {%- endif -%}
    {%- set configuration = {} -%}
    {%- set protocol = {'minReaderVersion': 1, 'minWriterVersion': 1, 'readerFeatures': []} -%}
    {%- for row in run_query('show tblproperties delta.'
        ~ lakemirror.quote_identifier(location)).rows -%}
        {%- if row[0] in ['delta.minReaderVersion', 'delta.minWriterVersion'] -%}
            {%- do protocol.update({row[0][6:]: row[1] | int}) -%}
        {%- elif row[0].startswith('delta.feature.') -%}
            {%- do protocol.readerFeatures.append(row[0][14:]) -%}
        {%- else -%}
            {%- do configuration.update({row[0]: row[1]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return({'configuration': configuration, 'reader': protocol.minReaderVersion,
               'writer': protocol.minWriterVersion,
               'features': lakemirror._protocol_features(protocol)}) }}
{% endmacro %}

{#-- The state read_delta_state would return, as a lakemirror run passes it in the var
     lakemirror_delta_states for tables it read after its last build and that have had no
     commit since (python/lakemirror/delta/known_states.py); none for any other table, and
     under plain dbt. Valid only before this invocation writes the table. --#}
{% macro _known_delta_state(location) %}
    {%- set known = var('lakemirror_delta_states', {}).get(location) -%}
    {%- if known is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set protocol = known.protocol -%}
    {{ return({'configuration': known.configuration,
               'reader': protocol.minReaderVersion, 'writer': protocol.minWriterVersion,
               'features': lakemirror._protocol_features(protocol)}) }}
{% endmacro %}

{#-- The state read_delta_state returns, from the newest metaData and protocol actions of the
     commit files, else of the last checkpoint when older commits were cleaned up. --#}
{% macro _read_delta_log_state(location) %}
    {%- set log = location ~ '/_delta_log' -%}
    {%- set actions = run_query(
        "select get_json_object(line, '$.metaData.configuration') as configuration, "
        ~ "get_json_object(line, '$.protocol') as protocol from ("
        ~ "select path, explode(split(cast(content as string), '\\n')) as line "
        ~ "from binaryFile." ~ lakemirror.quote_identifier(log ~ '/*.json') ~ ") "
        ~ "where get_json_object(line, '$.metaData') is not null "
        ~ "or get_json_object(line, '$.protocol') is not null order by path desc") -%}
    {%- set newest = {'configuration': none, 'protocol': none} -%}
    {%- for row in actions.rows -%}
        {%- for name in ['configuration', 'protocol'] if newest[name] is none -%}
            {%- do newest.update({name: row[name]}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- if newest.configuration is none or newest.protocol is none -%}
        {%- set checkpoint = lakemirror._checkpoint_actions(log) -%}
        {%- for name in ['configuration', 'protocol'] if newest[name] is none -%}
            {%- do newest.update({name: checkpoint[name]}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set protocol = fromjson(newest.protocol) -%}
    {{ return({'configuration': fromjson(newest.configuration or '{}'),
               'reader': protocol.minReaderVersion, 'writer': protocol.minWriterVersion,
               'features': lakemirror._protocol_features(protocol)}) }}
{% endmacro %}

{#-- metaData configuration and protocol (as JSON) of the newest checkpoint (found by name:
     engines list no hidden files such as _last_checkpoint). --#}
{% macro _checkpoint_actions(log) %}
    {%- set newest = run_query("select max(path) as path from binaryFile."
        ~ lakemirror.quote_identifier(log ~ '/*.checkpoint*.parquet')).rows[0][0] -%}
    {%- if newest is none -%}
        {{ exceptions.raise_compiler_error("lakemirror: " ~ log ~ " holds neither a metaData "
            ~ "and protocol commit nor a checkpoint; is it a Delta table?") }}
    {%- endif -%}
    {%- set version = newest.split('/')[-1].split('.')[0] -%}
    {%- set checkpoint = run_query(
        "select case when metaData is not null then to_json(metaData.configuration) end "
        ~ "as configuration, case when protocol is not null then to_json(protocol) end "
        ~ "as protocol from parquet."
        ~ lakemirror.quote_identifier(log ~ '/' ~ version ~ '.checkpoint*.parquet') ~ " "
        ~ "where metaData is not null or protocol is not null") -%}
    {%- set actions = {'configuration': none, 'protocol': none} -%}
    {%- for row in checkpoint.rows -%}
        {%- for name in ['configuration', 'protocol'] if row[name] is not none -%}
            {%- do actions.update({name: row[name]}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(actions) }}
{% endmacro %}

{#-- Table features a protocol action supports: listed ones (reader 3 / writer 7), else the
     features its legacy versions imply. --#}
{% macro _protocol_features(protocol) %}
    {%- set features = (protocol.readerFeatures or []) + (protocol.writerFeatures or []) -%}
    {%- if protocol.minWriterVersion < 7 -%}
        {%- for name, entry in lakemirror.delta_feature_catalog().items()
            if entry.writer <= protocol.minWriterVersion
            and entry.reader <= protocol.minReaderVersion -%}
            {%- do features.append(name) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(features | unique | list) }}
{% endmacro %}
