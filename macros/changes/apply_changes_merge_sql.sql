{#-- MERGE a model's output (rows with _lm_change and _lm_position) into its table: its upserts,
     and a delete for each key of `changed` (the keys the mirror changed, with their positions)
     that the output holds no upsert for. A change matches only rows older than itself, so
     applying the same changes twice changes nothing. --#}
{% macro apply_changes_merge_sql(target, output, keys, columns, changed) %}
    {{ return(adapter.dispatch('apply_changes_merge_sql', 'lakemirror')(
        target, output, keys, columns, changed)) }}
{% endmacro %}

{% macro default__apply_changes_merge_sql(target, output, keys, columns, changed) %}
    {%- set quoted = lakemirror._quoted_identifiers(columns) -%}
    {%- set deleted = [] -%}
    {%- for column in columns -%}
        {%- set name = lakemirror.quote_identifier(column) -%}
        {%- if column == '_lm_position' or column | lower in keys | map('lower') | list -%}
            {%- do deleted.append('changed.' ~ name) -%}
        {%- elif column == '_lm_change' -%}
            {%- do deleted.append("'delete' as _lm_change") -%}
        {%- else -%}
            {%- do deleted.append('null as ' ~ name) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set assigned = [] -%}
    {%- for column in quoted -%}
        {%- do assigned.append([column, 'source.' ~ column]) -%}
    {%- endfor -%}
    {%- set source -%}
        select {{ quoted | join(', ') }} from {{ output }} where _lm_change = 'upsert'
        union all
        select {{ deleted | join(', ') }}
        from {{ changed }} as changed
        left anti join (
            select * from {{ output }} where _lm_change = 'upsert'
        ) as kept
            on {{ lakemirror._keys_match('changed', 'kept', keys) }}
    {%- endset -%}
    {%- set newer = 'target._lm_position < source._lm_position' -%}
    {{ return(lakemirror._merge_statement(
        target, source, lakemirror._keys_match('target', 'source', keys), [
            {'when': 'matched', 'if': newer ~ " and source._lm_change = 'delete'",
             'then': 'delete'},
            {'when': 'matched', 'if': newer, 'then': 'update', 'set': assigned},
            {'when': 'not_matched', 'if': "source._lm_change = 'upsert'", 'then': 'insert',
             'set': assigned}])) }}
{% endmacro %}
