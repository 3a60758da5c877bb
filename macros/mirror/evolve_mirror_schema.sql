{#-- Before a mirror MERGE: give the mirrored table the batch's new columns (older rows read
     NULL) and widen the columns staging widened (tinyint→smallint→int→bigint, float→double,
     NULL type → any, decimal to more digits before or after the point). Staging already
     refused every other type change, so one here is a hard error. A metadata commit happens
     only when something changes. `change_columns`: the columns of `changes` when the caller
     read them already. --#}
{% macro evolve_mirror_schema(target, changes, change_columns=none) %}
    {{ return(adapter.dispatch('evolve_mirror_schema', 'lakemirror')(
        target, changes, change_columns)) }}
{% endmacro %}

{% macro default__evolve_mirror_schema(target, changes, change_columns=none) %}
    {%- set target_columns = adapter.get_columns_in_relation(target) -%}
    {%- set target_types = {} -%}
    {%- for column in target_columns -%}
        {%- do target_types.update({column.name: column.data_type}) -%}
    {%- endfor -%}
    {%- set added = [] -%}
    {%- set widened = {} -%}
    {%- for column in change_columns or adapter.get_columns_in_relation(changes) -%}
        {%- set old_type = target_types.get(column.name) -%}
        {%- if column.name == '__rowMarker__' or column.name.startswith('_lm_') -%}
        {%- elif old_type is none -%}
            {%- do added.append(column) -%}
        {%- elif old_type != column.data_type -%}
            {%- if not lakemirror._widens(old_type, column.data_type) -%}
                {{ exceptions.raise_compiler_error(
                    "lakemirror: model " ~ model.name ~ ": column " ~ column.name
                    ~ " changed type from " ~ old_type ~ " to " ~ column.data_type
                    ~ "; only widening is applied (tinyint→smallint→int→bigint, float→double, "
                    ~ "decimal to more digits before or after the point). "
                    ~ "Recreate the landing-zone table folder to start over with the new type.") }}
            {%- endif -%}
            {%- do widened.update({column.name: column}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if widened -%}
        {%- set columns = [] -%}
        {%- for column in target_columns -%}
            {%- do columns.append(widened.get(column.name, column)) -%}
        {%- endfor -%}
        {%- do lakemirror.rewrite_columns(target, columns + added) -%}
    {%- elif added -%}
        {%- do lakemirror.add_columns(target, added) -%}
    {%- endif -%}
{% endmacro %}

{#-- Whether Delta may widen a column from one Spark type to the other without losing a value:
     along a chain, from the NULL type to any, and from decimal(p,s) to a decimal with at least
     as many digits before and after the point (the same widenings as staging's). --#}
{% macro _widens(old_type, new_type) %}
    {%- set chains = [['tinyint', 'smallint', 'int', 'bigint'], ['float', 'double']] -%}
    {%- if old_type == 'void' -%}
        {{ return(true) }}
    {%- endif -%}
    {%- for chain in chains -%}
        {%- if old_type in chain and new_type in chain
            and chain.index(old_type) < chain.index(new_type) -%}
            {{ return(true) }}
        {%- endif -%}
    {%- endfor -%}
    {%- set old_digits = lakemirror._decimal_digits(old_type) -%}
    {%- set new_digits = lakemirror._decimal_digits(new_type) -%}
    {%- if old_digits and new_digits -%}
        {{ return(new_digits.scale >= old_digits.scale
                  and new_digits.whole >= old_digits.whole) }}
    {%- endif -%}
    {{ return(false) }}
{% endmacro %}

{#-- A Spark decimal type's digits after the point (scale) and before it (whole); none for any
     other type. --#}
{% macro _decimal_digits(spark_type) %}
    {%- set match = modules.re.fullmatch('decimal[(] *([0-9]+) *, *([0-9]+) *[)]',
                                         spark_type | lower) -%}
    {%- if not match -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set precision, scale = match.group(1) | int, match.group(2) | int -%}
    {{ return({'scale': scale, 'whole': precision - scale}) }}
{% endmacro %}
