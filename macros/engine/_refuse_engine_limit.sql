{#-- Stop the running node, before any SQL, at a limit of the embedded engine: names the model,
     what it asked for, why the engine cannot, and what works instead. --#}
{% macro _refuse_engine_limit(asked, why, instead) %}
    {{ exceptions.raise_compiler_error(
        "lakemirror: " ~ model.resource_type ~ " " ~ model.name ~ " asks for " ~ asked
        ~ ", which the embedded engine (Sail) cannot do: " ~ why ~ ". " ~ instead
        ~ " (docs/pages/dbt-project.md, \"dbt features and their status per engine\").") }}
{% endmacro %}

{#-- Refuse a table in a format other than Delta on the embedded engine: Sail writes it, but
     reports the written row count as an unsigned integer that the Spark Connect client cannot
     read, so every such write fails in dbt after the fact. --#}
{% macro _delta_only_on_embedded() %}
    {%- set file_format = config.get('file_format') or 'delta' -%}
    {%- if file_format != 'delta' and not lakemirror.engine_capabilities().non_delta_writes -%}
        {%- do lakemirror._refuse_engine_limit(
            "file_format '" ~ file_format ~ "'",
            "a write to a non-Delta table returns its row count as an unsigned integer, "
            ~ "which the Spark Connect client cannot read",
            "Use file_format 'delta' (the default lakemirror sets), or the spark target") -%}
    {%- endif -%}
{% endmacro %}
