{#-- A dict that lives for one dbt invocation (kept in dbt's graph, as _attach_relations_once
     keeps its mark: a warm process keeps its graph between invocations, so each invocation
     starts with an empty one): what a statement of this invocation already learned, so the
     models after it need not send it again. --#}
{% macro _invocation_memo(name) %}
    {%- set key = 'lakemirror_memo_' ~ name -%}
    {%- if graph.get(key, {}).get('invocation_id') != invocation_id -%}
        {%- do graph.update({key: {'invocation_id': invocation_id, 'values': {}}}) -%}
    {%- endif -%}
    {{ return(graph[key]['values']) }}
{% endmacro %}
