{#-- A MERGE into `target` (as target) of the query `source` (as source) on the condition `on`,
     with `clauses` in order: each {'when': 'matched' | 'not_matched', 'if': an extra condition
     or none, 'then': 'delete' | 'update' | 'insert', 'set': [[column, expression], ...]}
     (quoted columns; for an insert, the values of the new row). In Spark SQL, or as a request
     to write it through delta-rs when the model's writes go there (_feed_through_delta_rs):
     the conditions and expressions are the same SQL in both. --#}
{% macro _merge_statement(target, source, on, clauses) %}
    {%- if lakemirror._feed_through_delta_rs() -%}
        {%- set requested = [] -%}
        {%- for clause in clauses -%}
            {%- set assignments = {} -%}
            {%- for column, expression in clause.get('set', []) -%}
                {%- do assignments.update({column: expression}) -%}
            {%- endfor -%}
            {%- do requested.append({'when': clause.when, 'if': clause.get('if'),
                                     'then': clause.then, 'set': assignments}) -%}
        {%- endfor -%}
        {{ return(lakemirror._delta_rs_request({
            'write': 'merge', 'table': lakemirror._table_location(target), 'source': source,
            'on': on, 'clauses': requested})) }}
    {%- endif -%}
    merge into {{ target }} as target
    using (
        {{ source }}
    ) as source
    on {{ on }}
    {% for clause in clauses -%}
    when {{ 'not matched' if clause.when == 'not_matched' else 'matched' }}
        {%- if clause.get('if') %} and {{ clause['if'] }}{% endif %} then
        {%- if clause.then == 'delete' %} delete
        {%- elif clause.then == 'update' %} update set
            {% for column, expression in clause.set -%}
            {{ column }} = {{ expression }}{{ ',' if not loop.last }}
            {% endfor -%}
        {%- else %} insert (
            {% for column, expression in clause.set -%}
            {{ column }}{{ ',' if not loop.last }}
            {% endfor -%}
        ) values (
            {% for column, expression in clause.set -%}
            {{ expression }}{{ ',' if not loop.last }}
            {% endfor -%}
        )
        {%- endif %}
    {% endfor -%}
{% endmacro %}
