{#-- A warehouse schema's name in the engine's catalog: <schema><suffix> with
     LAKEMIRROR_SCHEMA_SUFFIX (an env var, as the generated sources read it too), else as it
     is. A Spark Connect server's catalog is shared by all its sessions: warehouses mirrored on
     one server each take a suffix of their own, so their tables never share a name
     (docs/pages/spark-cluster.md). The warehouse itself (folders, registry, bookkeeping) keeps
     the plain names, so a warehouse may change its suffix between runs. --#}
{% macro catalog_schema(schema) %}
    {{ return(adapter.dispatch('catalog_schema', 'lakemirror')(schema)) }}
{% endmacro %}

{% macro default__catalog_schema(schema) %}
    {{ return(schema ~ lakemirror._schema_suffix()) }}
{% endmacro %}

{#-- The warehouse schema of a schema as the catalog names it: without the suffix. --#}
{% macro _warehouse_schema(schema) %}
    {%- set suffix = lakemirror._schema_suffix() -%}
    {%- if suffix and schema != suffix and schema.endswith(suffix) -%}
        {{ return(schema[:(schema | length) - (suffix | length)]) }}
    {%- endif -%}
    {{ return(schema) }}
{% endmacro %}

{#-- LAKEMIRROR_SCHEMA_SUFFIX: empty, or `_` and lowercase letters, digits and `_`. --#}
{% macro _schema_suffix() %}
    {%- set suffix = env_var('LAKEMIRROR_SCHEMA_SUFFIX', '') | trim -%}
    {%- if suffix and not modules.re.fullmatch('_[a-z0-9_]+', suffix) -%}
        {{ exceptions.raise_compiler_error(
            "lakemirror: LAKEMIRROR_SCHEMA_SUFFIX is '" ~ suffix ~ "'; it must be '_' followed by "
            ~ "lowercase letters, digits or '_', e.g. '_sales'.") }}
    {%- endif -%}
    {{ return(suffix) }}
{% endmacro %}
