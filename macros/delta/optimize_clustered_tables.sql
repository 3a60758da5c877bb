{#-- OPTIMIZE the Delta tables at `locations` (folders or URLs), which reclusters a table with
     liquid clustering (`lakemirror maintain` runs it on the clustered mirrored tables:
     `dbt run-operation lakemirror.optimize_clustered_tables --args '{locations: [...]}'`). --#}
{% macro optimize_clustered_tables(locations) %}
    {{ return(adapter.dispatch('optimize_clustered_tables', 'lakemirror')(locations)) }}
{% endmacro %}

{% macro default__optimize_clustered_tables(locations) %}
    {%- if not lakemirror.engine_capabilities().clustering -%}
        {{ exceptions.raise_compiler_error("lakemirror.optimize_clustered_tables: "
            ~ lakemirror.delta_engine_capabilities().engine ~ " has no OPTIMIZE; run "
            ~ "`lakemirror maintain` with the spark or connect target.") }}
    {%- endif -%}
    {%- for location in locations -%}
        {%- do run_query('optimize delta.' ~ lakemirror.quote_identifier(location)) -%}
        {%- do log('lakemirror: optimized ' ~ location, info=true) -%}
    {%- endfor -%}
{% endmacro %}
