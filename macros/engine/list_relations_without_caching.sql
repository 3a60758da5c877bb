{#-- dbt-spark lists the relations of each schema it builds in, first thing in every command:
     attach the warehouse's registered relations then, so a new session sees what earlier
     sessions built (and the sources lakemirror ingest staged, in schemas dbt never lists). --#}
{% macro spark__list_relations_without_caching(relation) %}
    {%- do lakemirror.attach_relations() -%}
    {% call statement('list_relations_without_caching', fetch_result=True) -%}
        show table extended in {{ relation.schema }} like '*'
    {% endcall %}
    {% do return(load_result('list_relations_without_caching').table) %}
{% endmacro %}
