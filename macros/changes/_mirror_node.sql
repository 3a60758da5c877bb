{#-- The generated mirror model behind `mirror` (a ref() of it), from dbt's graph: its keys,
     its conditional update column (none without one) and its staging source. A ref() of anything else, a history model included, is an error. --#}
{% macro _mirror_node(mirror) %}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model'
        and node.config.get('incremental_strategy') == 'mirror'
        and (node.schema | lower, (node.alias or node.name) | lower)
            == (mirror.schema | lower, mirror.identifier | lower) -%}
        {%- if node.config.get('mirror_history') -%}
            {{ exceptions.raise_compiler_error(
                "lakemirror: model " ~ model.name ~ ": mirror_changes reads a mirrored table, "
                ~ "not a history model (" ~ mirror ~ "): a history table already keeps every "
                ~ "version, so read it with a filter on _lm_valid_from instead.") }}
        {%- endif -%}
        {%- set source_name = node.sources[0] -%}
        {%- for source in graph.sources.values()
            if [source.source_name, source.name] == [source_name[0], source_name[1]] -%}
            {%- set keys = node.config.get('unique_key') or [] -%}
            {{ return({'keys': [keys] if keys is string else keys,
                       'conditional': node.config.get('conditional_update_column'),
                       'staging': source.relation_name,
                       'name': lakemirror._warehouse_schema(node.schema) ~ '.'
                           ~ (node.alias or node.name)}) }}
        {%- endfor -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error(
        "lakemirror: model " ~ model.name ~ ": mirror_changes takes a ref() of a mirror model "
        ~ "(incremental_strategy 'mirror'); " ~ mirror ~ " is not one.") }}
{% endmacro %}
