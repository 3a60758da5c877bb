{#-- dbt-spark's tblproperties clause of CREATE TABLE. For Delta models it holds everything the
     model's Delta settings ask for (tblproperties, isolation_level, delta_features and the
     lowest protocol supporting them), validated first, and says when the reader set keeps a
     new mirrored table copy-on-write; other formats get their tblproperties. --#}
{% macro spark__tblproperties_clause() -%}
    {%- if config.get('file_format') == 'delta' -%}
        {%- set settings = lakemirror.delta_settings() -%}
        {%- if settings.copy_on_write_because -%}
            {%- do log("lakemirror: " ~ this ~ ": copy-on-write, no deletion vectors: "
                ~ settings.copy_on_write_because | join(', ')
                ~ " (lakemirror_readers) cannot read them", info=true) -%}
        {%- endif -%}
        {%- set properties = settings.properties.copy() -%}
        {%- do properties.update(settings.protocol) -%}
    {%- else -%}
        {%- set properties = config.get('tblproperties') or {} -%}
    {%- endif -%}
    {{ lakemirror._tblproperties_sql(properties) }}
{%- endmacro %}

{#-- `tblproperties ('key' = 'value', ...)`, or nothing for no properties. --#}
{% macro _tblproperties_sql(properties) -%}
    {%- if properties %}
    tblproperties (
        {%- for key, value in properties.items() | sort %}
        '{{ lakemirror._sql_escape(key) }}' = '{{ lakemirror._sql_escape(value) }}'
        {%- if not loop.last %},{% endif %}
        {%- endfor %}
    )
    {%- endif %}
{%- endmacro %}
