{#-- dbt-spark lists the relations of each schema it builds in, first thing in every command:
     the first listing of an invocation attaches the warehouse's registered relations, so a new
     session sees what earlier sessions built (and the sources lakemirror ingest staged, in
     schemas dbt never lists); later listings only list. --#}
{% macro spark__list_relations_without_caching(relation) %}
    {%- do lakemirror._attach_relations_once() -%}
    {% call statement('list_relations_without_caching', fetch_result=True) -%}
        show table extended in {{ relation.schema }} like '*'
    {% endcall %}
    {% do return(load_result('list_relations_without_caching').table) %}
{% endmacro %}

{#-- attach_relations, once per dbt invocation: the invocation's id is remembered in dbt's graph
     of the invocation (a warm process keeps its parsed graph, and its engine session, between
     invocations: each of them attaches again, seeing what other processes registered since).
     Remembered once attached, so a listing never runs before its session holds the
     relations. --#}
{% macro _attach_relations_once() %}
    {%- if graph.get('lakemirror_attached_in') == invocation_id -%}
        {{ return(none) }}
    {%- endif -%}
    {%- do lakemirror.attach_relations() -%}
    {%- do graph.update({'lakemirror_attached_in': invocation_id}) -%}
{% endmacro %}
