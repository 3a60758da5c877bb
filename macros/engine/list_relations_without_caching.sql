{#-- dbt-spark lists a schema's relations before on-run-start; attach the schema's registered
     tables first so a new session sees what earlier sessions built. --#}
{% macro spark__list_relations_without_caching(relation) %}
    {%- do lakemirror.attach_relations(relation.schema) -%}
    {% call statement('list_relations_without_caching', fetch_result=True) -%}
        show table extended in {{ relation.schema }} like '*'
    {% endcall %}
    {% do return(load_result('list_relations_without_caching').table) %}
{% endmacro %}
