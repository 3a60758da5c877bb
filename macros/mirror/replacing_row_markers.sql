{#-- The __rowMarker__ values of the changes that replace all of a key's rows (update,
     delete, upsert), as a SQL list for `__rowMarker__ in (...)`. Rendered from
     python/lakemirror/contract.py by
     `python -m lakemirror.generated_macros`: edit it there. --#}
{% macro replacing_row_markers() %}
    {{ return('(1, 2, 4)') }}
{% endmacro %}
