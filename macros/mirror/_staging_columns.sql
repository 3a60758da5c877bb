{#-- A mirror model's compiled body and the columns of the staging relation it reads, kept for
     the model's run (per node, in the invocation's memo): the body's SQL reads the staging
     columns once, and the `mirror` strategy takes the batch's data columns from them instead
     of reading its temporary view's again (see _batch_columns). --#}
{% macro _staging_columns(staging) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set compiled = lakemirror._compiled_mirror_body() -%}
    {%- if compiled.get('staging') != staging | string -%}
        {%- do compiled.update({'staging': staging | string,
                                'columns': adapter.get_columns_in_relation(staging)}) -%}
    {%- endif -%}
    {{ return(compiled['columns']) }}
{% endmacro %}

{#-- Keep `body`, the SQL staged_changes or staged_history returns for this model; return it. --#}
{% macro _kept_mirror_body(body) %}
    {%- if not execute -%}
        {{ return(body) }}
    {%- endif -%}
    {%- do lakemirror._compiled_mirror_body().update({'body': lakemirror._sql_lines(body)}) -%}
    {{ return(body) }}
{% endmacro %}

{#-- The columns of `changes`, the temporary view of the model's batch. When the model's compiled
     SQL is the body staged_changes or staged_history returned (comments aside), the view has the
     staging relation's data columns, of the same types, and only _lm_ columns besides, so the
     columns the body read are the answer; for any other SQL they are read from the view. --#}
{% macro _batch_columns(changes) %}
    {%- set compiled = lakemirror._compiled_mirror_body() -%}
    {%- set body = lakemirror._sql_lines(compiled_code) -%}
    {%- if 'columns' in compiled and compiled.get('body') == body -%}
        {{ return(compiled['columns']) }}
    {%- endif -%}
    {{ return(adapter.get_columns_in_relation(changes)) }}
{% endmacro %}

{% macro _compiled_mirror_body() %}
    {%- set bodies = lakemirror._invocation_memo('compiled_mirror_bodies') -%}
    {%- if model.unique_id not in bodies -%}
        {%- do bodies.update({model.unique_id: {}}) -%}
    {%- endif -%}
    {{ return(bodies[model.unique_id]) }}
{% endmacro %}

{#-- A SQL text's non-blank lines, stripped, without whole-line `--` comments. --#}
{% macro _sql_lines(sql) %}
    {%- set lines = [] -%}
    {%- for line in sql.splitlines() -%}
        {%- set line = line.strip() -%}
        {%- if line and not line.startswith('--') -%}
            {%- do lines.append(line) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(lines) }}
{% endmacro %}
