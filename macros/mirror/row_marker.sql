{#-- The __rowMarker__ value of a change: row_marker('insert'), 'update', 'delete' or
     'upsert'. Rendered from python/lakemirror/contract.py by
     `python -m lakemirror.generated_macros`: edit it there. --#}
{% macro row_marker(change) %}
    {%- set markers = {'insert': 0, 'update': 1, 'delete': 2, 'upsert': 4} -%}
    {%- if change not in markers -%}
        {{ exceptions.raise_compiler_error('row_marker: unknown change ' ~ change
            ~ '; use one of ' ~ markers.keys() | join(', ')) }}
    {%- endif -%}
    {{ return(markers[change]) }}
{% endmacro %}
