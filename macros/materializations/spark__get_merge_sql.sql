{#-- dbt-spark's merge strategy with explicit column lists instead of `update set *` and
     `insert *`, which match by position on some engines and fail when the model and its table
     differ: matched rows update the columns both have (narrowed by merge_update_columns or
     merge_exclude_columns), new rows fill every target column by name, NULL where the model
     lacks one. unique_key and incremental_predicates work as in dbt-spark. --#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- set keys = [] if not unique_key else
        ([unique_key] if unique_key is string else unique_key) -%}
    {%- for key in keys -%}
        {%- do predicates.append(
            'dbt_internal_source.' ~ key ~ ' = dbt_internal_dest.' ~ key) -%}
    {%- endfor -%}
    {%- if not keys -%}
        {%- do predicates.append('false') -%}
    {%- endif -%}
    {%- set target_columns = adapter.get_columns_in_relation(target) -%}
    {%- set source_columns = adapter.get_columns_in_relation(source) -%}
    {%- set update_columns = lakemirror._merge_update_columns(target_columns, source_columns) -%}
    {%- set values = lakemirror._by_name_values(
        target, target_columns, source_columns, prefix='dbt_internal_source.') -%}
    {%- set names = [] -%}
    {%- for column in target_columns -%}
        {%- do names.append(lakemirror.quote_identifier(column.name)) -%}
    {%- endfor -%}
    {%- set updates = [] -%}
    {%- for column in update_columns -%}
        {%- do updates.append(lakemirror.quote_identifier(column.name) ~ ' = dbt_internal_source.'
            ~ lakemirror.quote_identifier(column.name)) -%}
    {%- endfor -%}
    {%- set condition = predicates | join(' and ') -%}
    {%- set sql_header = config.get('sql_header', none) -%}
    {{ sql_header if sql_header is not none }}
    merge into {{ target }} as dbt_internal_dest
    using {{ source }} as dbt_internal_source
        on {{ condition }}
    {% if updates -%}
    when matched then
        update set {{ updates | join(', ') }}
    {% endif -%}
    when not matched then
        insert ({{ names | join(', ') }})
        values ({{ values | join(', ') }})
{% endmacro %}

{#-- The target columns a matched row updates: those the source has, narrowed by the model's
     merge_update_columns or merge_exclude_columns (names checked against the target). --#}
{% macro _merge_update_columns(target_columns, source_columns) %}
    {%- set only = lakemirror._lowercase_names('merge_update_columns', target_columns) -%}
    {%- set exclude = lakemirror._lowercase_names('merge_exclude_columns', target_columns) -%}
    {%- if only is not none and exclude is not none -%}
        {{ exceptions.raise_compiler_error(
            "Model " ~ model.name ~ ": set merge_update_columns or merge_exclude_columns, "
            ~ "not both.") }}
    {%- endif -%}
    {%- set missing = lakemirror._columns_missing_from(target_columns, source_columns)
        | map(attribute='name') | list -%}
    {%- set columns = [] -%}
    {%- for column in target_columns if column.name not in missing
        and (only is none or column.name | lower in only)
        and column.name | lower not in (exclude or []) -%}
        {%- do columns.append(column) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}

{#-- A model's list of column names from config `setting` (a name or a list), lowercased; none
     when unset. Fails on a name that is not a target column, which would be silently ignored. --#}
{% macro _lowercase_names(setting, target_columns) %}
    {%- set names = config.get(setting) -%}
    {%- if not names -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set names = [names] if names is string else names -%}
    {%- set known = target_columns | map(attribute='name') | map('lower') | list -%}
    {%- for name in names if name | lower not in known -%}
        {{ exceptions.raise_compiler_error(
            "Model " ~ model.name ~ ": " ~ setting ~ " names '" ~ name ~ "', which is not a "
            ~ "column of its table. Columns: "
            ~ target_columns | map(attribute='name') | join(', ') ~ ".") }}
    {%- endfor -%}
    {{ return(names | map('lower') | list) }}
{% endmacro %}
