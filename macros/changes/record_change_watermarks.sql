{#-- Post-hook of a model that reads mirror_changes: the positions it read each mirror's
     changes through. A failure before it means the next build takes the same changes again,
     which apply_changes' position guard makes harmless. --#}
{% macro record_change_watermarks() %}
    {{ return(adapter.dispatch('record_change_watermarks', 'lakemirror')()) }}
{% endmacro %}

{% macro default__record_change_watermarks() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set rows = [] -%}
    {%- for key, bounds in lakemirror._invocation_memo('change_bounds').items()
        if key.startswith(model.unique_id ~ ' ') -%}
        {%- do rows.append("('" ~ lakemirror._sql_escape(this | string) ~ "', '"
            ~ lakemirror._sql_escape(bounds.mirror) ~ "', '"
            ~ lakemirror._sql_escape(bounds.since) ~ "', " ~ bounds.end ~ ", '"
            ~ invocation_id ~ "', cast(current_timestamp() as string))") -%}
    {%- endfor -%}
    {%- if rows %}
    insert into {{ lakemirror._change_watermarks_table() }} values {{ rows | join(', ') }}
    {%- endif %}
{% endmacro %}
