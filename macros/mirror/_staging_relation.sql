{#-- The staging source a mirror model reads (its one lakemirror_staging source). --#}
{% macro _staging_relation() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set staging = model.sources | selectattr(0, 'equalto', 'lakemirror_staging') | list -%}
    {%- if staging | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            "lakemirror: mirror model " ~ model.name ~ " must read exactly one "
            ~ "source('lakemirror_staging', ...); it reads " ~ (model.sources | tojson)) }}
    {%- endif -%}
    {{ return(source(staging[0][0], staging[0][1])) }}
{% endmacro %}
