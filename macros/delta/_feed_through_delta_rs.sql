{#-- Whether the running model's writes to its table go to delta-rs (engine/delta_rs_writes.py):
     the embedded engine cannot commit to a table whose change data feed is on, so its session
     hands such writes there. Only a mirror or apply_changes model's writes are handed over
     (its CREATE, MERGE, settings and added columns), when its config turns the feed on or its
     table has it on (recorded by apply_delta_settings before the model runs). --#}
{% macro _feed_through_delta_rs() %}
    {%- if not lakemirror._hands_feed_writes() -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return('changeDataFeed' in lakemirror.delta_settings().features
        or model.unique_id in lakemirror._invocation_memo('feed_tables')) }}
{% endmacro %}

{#-- Whether the running model is one whose writes the engine can hand to delta-rs. --#}
{% macro _hands_feed_writes() %}
    {{ return(model is defined and model.get('resource_type') == 'model'
        and lakemirror.engine_capabilities().delta_rs_writes
        and config.get('materialized') == 'incremental'
        and config.get('file_format') == 'delta'
        and config.get('incremental_strategy') in ['mirror', 'apply_changes']) }}
{% endmacro %}

{#-- The statement that asks the session to write `request` through delta-rs: its mark, then
     the request as JSON (every name and value inside JSON strings). --#}
{% macro _delta_rs_request(request) %}
    {{ return("-- lakemirror: write through delta-rs\n" ~ request | tojson) }}
{% endmacro %}
