{#-- Hook of every Delta model: bring the table's properties and protocol to what its config
     asks, with one ALTER TABLE ... SET and one ... UNSET TBLPROPERTIES, and only for values
     that differ (each metadata commit conflicts with every concurrent writer). A table kept by
     this run is brought up to date before its data is written ('before', a pre-hook); a table
     this run creates or replaces gets its settings in the CREATE, and is checked after it
     ('after', a post-hook). Settings are validated before any SQL of the model runs. Before
     its data, the table's state is the one lakemirror's run passed when it knows the table
     has no commit since it read it (see _known_delta_state), else read. --#}
{% macro apply_delta_settings(moment) %}
    {%- if not execute or config.get('file_format') != 'delta'
        or config.get('materialized') not in ['table', 'incremental'] -%}
        {{ return('') }}
    {%- endif -%}
    {#-- validated before any SQL of the model runs; after it, only for a table to check --#}
    {%- set validated = lakemirror.delta_settings() if moment == 'before' else none -%}
    {%- set replaced = config.get('materialized') == 'table' or should_full_refresh() -%}
    {%- set relation = load_relation(this) -%}
    {%- if relation is none or (moment == 'before') == replaced -%}
        {{ return('') }}
    {%- endif -%}
    {%- set settings = validated or lakemirror.delta_settings() -%}
    {%- set location = lakemirror._table_location(this) -%}
    {%- set state = (lakemirror._known_delta_state(location) if moment == 'before' else none)
        or lakemirror.read_delta_state(location) -%}
    {%- if moment == 'before' -%}
        {%- do lakemirror._refuse_unwritable_change_feed(state) -%}
    {%- endif -%}
    {%- set changes = lakemirror._delta_setting_changes(settings, state) -%}
    {%- if (changes.set or changes.unset) and lakemirror._feed_through_delta_rs() -%}
        {%- do log("lakemirror: " ~ this ~ ": set " ~ changes.set | tojson ~ ", unset "
            ~ changes.unset | tojson ~ " (through delta-rs)", info=true) -%}
        {%- call statement('set_delta_settings') -%}
            {{ lakemirror._delta_rs_request({
                'write': 'metadata', 'table': location, 'set': changes.set,
                'unset': changes.unset, 'all_nullable': true}) }}
        {%- endcall -%}
        {{ return('') }}
    {%- endif -%}
    {%- if changes.set -%}
        {%- set pairs = [] -%}
        {%- for key, value in changes.set.items() | sort -%}
            {%- do pairs.append("'" ~ lakemirror._sql_escape(key) ~ "' = '"
                ~ lakemirror._sql_escape(value) ~ "'") -%}
        {%- endfor -%}
        {%- do log("lakemirror: " ~ this ~ ": set " ~ pairs | join(', '), info=true) -%}
        {%- call statement('set_delta_settings') -%}
            alter table {{ this }} set tblproperties ({{ pairs | join(', ') }})
        {%- endcall -%}
    {%- endif -%}
    {%- if changes.unset -%}
        {%- do log("lakemirror: " ~ this ~ ": unset " ~ changes.unset | join(', '), info=true) -%}
        {%- call statement('unset_delta_settings') -%}
            alter table {{ this }} unset tblproperties if exists (
                {%- for key in changes.unset %}
                '{{ lakemirror._sql_escape(key) }}'{{ ',' if not loop.last }}
                {%- endfor %})
        {%- endcall -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{#-- Refuses, before the model writes, a table whose change data feed is on (turned on by
     another writer; the model's own config is validated earlier) when the engine cannot
     write the feed: a write without its change data would corrupt the feed for its readers.
     A table it can write is recorded (the memo feed_tables), so the model's writes go where
     the feed is written (_feed_through_delta_rs). --#}
{% macro _refuse_unwritable_change_feed(state) %}
    {%- set engine = lakemirror.delta_engine_capabilities() -%}
    {%- set feed_on = state.configuration.get('delta.enableChangeDataFeed', '') | lower == 'true'
        or (state.writer >= 7 and 'changeDataFeed' in state.features) -%}
    {%- if feed_on and 'changeDataFeed' in engine.writable_features -%}
        {%- do lakemirror._invocation_memo('feed_tables').update({model.unique_id: true}) -%}
    {%- elif feed_on -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": " ~ this
            ~ " has Delta's change data feed on (delta.enableChangeDataFeed or the "
            ~ "changeDataFeed table feature), and " ~ engine.engine ~ " cannot write it; "
            ~ "nothing was written. Run this model on " ~ engine.elsewhere ~ ".") }}
    {%- endif -%}
{% endmacro %}

{#-- {'set': properties whose value differs or that add a missing feature, 'unset': keys
     lakemirror set earlier (lakemirror.managedProperties) that the config no longer has}. --#}
{% macro _delta_setting_changes(settings, state) %}
    {%- set current = state.configuration -%}
    {%- set changed = {} -%}
    {%- for key, value in settings.properties.items() if current.get(key) != value -%}
        {%- do changed.update({key: value}) -%}
    {%- endfor -%}
    {%- set missing = settings.features | reject('in', state.features) | list -%}
    {%- set engine = lakemirror.delta_engine_capabilities() -%}
    {%- for feature in missing if feature in engine.features_at_create_only -%}
        {{ exceptions.raise_compiler_error("lakemirror: model " ~ model.name ~ ": "
            ~ engine.engine ~ " can turn on " ~ feature ~ " only when it first creates the "
            ~ "table; it cannot add it to " ~ this ~ ", which exists. Configure it before the "
            ~ "table's first run, or add it on a Delta Lake on Spark or Databricks target.") }}
    {%- endfor -%}
    {%- if missing and state.writer < 7 and 'delta.minWriterVersion' in settings.protocol -%}
        {%- do changed.update({
            'delta.minReaderVersion': [settings.protocol['delta.minReaderVersion'] | int,
                                       state.reader] | max | string,
            'delta.minWriterVersion': [settings.protocol['delta.minWriterVersion'] | int,
                                       state.writer] | max | string}) -%}
    {%- elif missing -%}
        {%- for feature in missing -%}
            {%- do changed.update({'delta.feature.' ~ feature: 'supported'}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set managed_before = (current.get('lakemirror.managedProperties') or '').split(',') -%}
    {%- set unset = (managed_before + ['lakemirror.managedProperties'])
        | reject('in', settings.properties) | select('in', current) | list -%}
    {{ return({'set': changed, 'unset': unset | unique | list}) }}
{% endmacro %}
