{#-- The Delta settings the running model asks for, validated against the engine before any
     SQL runs. Reads the model configs isolation_level, tblproperties and delta_features; a
     mirror model the run creates also gets deletion vectors by default (_default_features).
     Returns {'properties': properties to hold (tblproperties, delta.isolationLevel, the
     properties that turn features on, lakemirror.managedProperties naming the keys lakemirror
     may unset later), 'features': the features asked for, 'protocol': properties that set
     the lowest protocol supporting them, 'copy_on_write_because': the readers that keep a new
     mirrored table without deletion vectors}. --#}
{% macro delta_settings() %}
    {%- set catalog = lakemirror.delta_feature_catalog() -%}
    {%- set engine = lakemirror.delta_engine_capabilities() -%}
    {%- set where = "lakemirror: model " ~ model.name ~ ": " -%}
    {%- set properties = lakemirror._configured_tblproperties(where) -%}
    {%- set level = config.get('isolation_level') -%}
    {%- if level is not none -%}
        {%- if level not in ['Serializable', 'WriteSerializable'] -%}
            {{ exceptions.raise_compiler_error(where ~ "isolation_level '" ~ level
                ~ "' is not an isolation level; use Serializable or WriteSerializable.") }}
        {%- elif level not in engine.isolation_levels -%}
            {{ exceptions.raise_compiler_error(where ~ engine.engine
                ~ " does not accept isolation_level '" ~ level ~ "'; it accepts: "
                ~ engine.isolation_levels | join(', ') ~ ".") }}
        {%- elif properties.get('delta.isolationLevel', level) != level -%}
            {{ exceptions.raise_compiler_error(where ~ "isolation_level '" ~ level
                ~ "' and tblproperties delta.isolationLevel '"
                ~ properties['delta.isolationLevel'] ~ "' disagree; set only isolation_level.") }}
        {%- endif -%}
        {%- do properties.update({'delta.isolationLevel': level}) -%}
    {%- endif -%}
    {%- set managed = properties.keys() | reject('in', ['lakemirror.managedProperties'])
        | sort | list -%}
    {%- set features = lakemirror._configured_features(where, properties, catalog, engine) -%}
    {%- set default = lakemirror._default_features(where, properties, features, engine) -%}
    {%- do features.extend(default.features) -%}
    {%- for feature in features if catalog[feature].property -%}
        {%- do properties.update({catalog[feature].property: catalog[feature].value}) -%}
    {%- endfor -%}
    {%- if managed -%}
        {%- do properties.update({'lakemirror.managedProperties': managed | join(',')}) -%}
    {%- endif -%}
    {{ return({'properties': properties, 'features': features,
               'protocol': lakemirror._protocol_properties(features, catalog, engine),
               'copy_on_write_because': default.copy_on_write_because}) }}
{% endmacro %}

{#-- Deletion vectors for a new table of a model that MERGEs changes by key (a mirror model, or
     a model with incremental_strategy 'apply_changes'), as Databricks does for new tables, when
     its config says nothing of them, the engine writes them and every reader in the model's
     reader set reads them; an existing table keeps its protocol. Returns {'features': [] or
     ['deletionVectors'], 'copy_on_write_because': the readers that cannot read them}. --#}
{% macro _default_features(where, properties, features, engine) %}
    {%- set none_added = {'features': [], 'copy_on_write_because': []} -%}
    {%- if config.get('incremental_strategy') not in ['mirror', 'apply_changes'] -%}
        {{ return(none_added) }}
    {%- endif -%}
    {%- set blockers = lakemirror._deletion_vector_blockers(where) -%}
    {%- if 'deletionVectors' in features and blockers -%}
        {{ exceptions.raise_compiler_error(where ~ "delta_features turn on deletionVectors, "
            ~ "which " ~ blockers | join(', ') ~ " in lakemirror_readers cannot read; remove "
            ~ "one or the other.") }}
    {%- endif -%}
    {%- if 'deletionVectors' in features or 'delta.enableDeletionVectors' in properties
        or 'deletionVectors' not in engine.writable_features
        or (load_relation(this) is not none and not should_full_refresh()) -%}
        {{ return(none_added) }}
    {%- endif -%}
    {{ return({'features': [] if blockers else ['deletionVectors'],
               'copy_on_write_because': blockers}) }}
{% endmacro %}

{#-- The readers of the model's reader set that cannot read deletion vectors. The set is the
     config lakemirror_readers, else the var of that name, else env LAKEMIRROR_READERS, else
     the default set: a list or a comma-separated string of doctor's profile names. --#}
{% macro _deletion_vector_blockers(where) %}
    {%- set profiles = lakemirror.delta_reader_profiles() -%}
    {%- set declared = config.get('lakemirror_readers')
        or var('lakemirror_readers', none) or env_var('LAKEMIRROR_READERS', '') -%}
    {%- set names = declared.split(',') if declared is string else declared -%}
    {%- set readers = names | map('string') | map('trim') | reject('equalto', '') | list
        or profiles.default -%}
    {%- set blockers = [] -%}
    {%- for reader in readers -%}
        {%- if reader not in profiles.reads_deletion_vectors -%}
            {{ exceptions.raise_compiler_error(where ~ "unknown reader '" ~ reader
                ~ "' in lakemirror_readers; use names from: "
                ~ profiles.reads_deletion_vectors.keys() | join(', ') ~ ".") }}
        {%- endif -%}
        {%- do blockers.append(reader) if not profiles.reads_deletion_vectors[reader]
            and reader not in blockers -%}
    {%- endfor -%}
    {{ return(blockers) }}
{% endmacro %}

{#-- The model's tblproperties as strings; protocol versions are refused (delta_features
     chooses them). --#}
{% macro _configured_tblproperties(where) %}
    {%- set configured = config.get('tblproperties') or {} -%}
    {%- if configured is not mapping -%}
        {{ exceptions.raise_compiler_error(where ~ "tblproperties must be a mapping of "
            ~ "property to value, got " ~ configured ~ ".") }}
    {%- endif -%}
    {%- set properties = {} -%}
    {%- for key, value in configured.items() -%}
        {%- if key in ['delta.minReaderVersion', 'delta.minWriterVersion'] -%}
            {{ exceptions.raise_compiler_error(where ~ "tblproperties " ~ key ~ ": list the "
                ~ "features in delta_features instead; lakemirror sets the lowest protocol "
                ~ "that supports them.") }}
        {%- endif -%}
        {%- do properties.update({key | string: (value | string | lower)
            if value is sameas true or value is sameas false else value | string}) -%}
    {%- endfor -%}
    {{ return(properties) }}
{% endmacro %}

{#-- delta_features plus the features tblproperties turn on, checked against the catalog,
     the engine and the model (a mirror model cannot be append-only). --#}
{% macro _configured_features(where, properties, catalog, engine) %}
    {%- set configured = config.get('delta_features') or [] -%}
    {%- if configured is string or configured is mapping -%}
        {{ exceptions.raise_compiler_error(where ~ "delta_features must be a list, e.g. "
            ~ "['deletionVectors'], got " ~ configured ~ ".") }}
    {%- endif -%}
    {%- set features = [] -%}
    {%- for feature in configured -%}
        {%- if feature not in catalog -%}
            {{ exceptions.raise_compiler_error(where ~ "unknown Delta table feature '" ~ feature
                ~ "' in delta_features. " ~ engine.engine ~ " can write: "
                ~ engine.writable_features | join(', ') ~ ".") }}
        {%- endif -%}
        {%- do features.append(feature) if feature not in features -%}
    {%- endfor -%}
    {%- for name, entry in catalog.items() -%}
        {%- set turned_on = properties.get('delta.feature.' ~ name) == 'supported'
            or (entry.property and (properties.get(entry.property) | string | lower)
                == entry.value) -%}
        {%- do features.append(name) if turned_on and name not in features -%}
    {%- endfor -%}
    {%- for feature in features if feature not in engine.writable_features -%}
        {{ exceptions.raise_compiler_error(where ~ engine.engine
            ~ " cannot write the Delta table feature '" ~ feature ~ "'. It can write: "
            ~ engine.writable_features | join(', ') ~ "."
            ~ ((" To use " ~ feature ~ ", run this model on " ~ engine.elsewhere ~ ".")
                if engine.elsewhere else "")) }}
    {%- endfor -%}
    {%- if 'appendOnly' in features and config.get('incremental_strategy') == 'mirror' -%}
        {{ exceptions.raise_compiler_error(where ~ "appendOnly cannot be used on a mirrored "
            ~ "table: mirroring updates and deletes rows.") }}
    {%- endif -%}
    {{ return(features) }}
{% endmacro %}

{#-- Properties that give the lowest protocol supporting `features`: a legacy protocol
     (delta.minReaderVersion/minWriterVersion) while every feature has one and the engine
     honours it, else table features (delta.feature.<name> = supported). --#}
{% macro _protocol_properties(features, catalog, engine) %}
    {%- if not features -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set readers = [] -%}
    {%- set writers = [] -%}
    {%- for feature in features -%}
        {%- do readers.append(catalog[feature].reader) -%}
        {%- do writers.append(catalog[feature].writer) -%}
    {%- endfor -%}
    {%- if writers | max < 7 and engine.legacy_protocols -%}
        {{ return({'delta.minReaderVersion': readers | max | string,
                   'delta.minWriterVersion': writers | max | string}) }}
    {%- endif -%}
    {%- set protocol = {} -%}
    {%- for feature in features if writers | max == 7 or not catalog[feature].property -%}
        {%- do protocol.update({'delta.feature.' ~ feature: 'supported'}) -%}
    {%- endfor -%}
    {{ return(protocol) }}
{% endmacro %}
