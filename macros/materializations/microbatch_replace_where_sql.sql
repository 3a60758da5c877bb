{#-- The microbatch strategy on the embedded engine, which has no dynamic partition overwrite:
     one `insert into ... replace where` swaps the batch's event-time range for the batch's rows,
     in one Delta commit, so a batch run again replaces its rows instead of adding them. The
     range is the one dbt filters the model's inputs by. A row outside it fails the batch and
     writes nothing, as Delta on Spark's replaceWhere constraint check does: it would otherwise
     land again with every run of its own batch. --#}
{% macro microbatch_replace_where_sql(arg_dict) %}
    {{ return(adapter.dispatch('microbatch_replace_where_sql', 'lakemirror')(arg_dict)) }}
{% endmacro %}

{% macro default__microbatch_replace_where_sql(arg_dict) %}
    {%- set target = arg_dict['target_relation'] -%}
    {%- set batch = model.get('batch') -%}
    {%- set event_time = lakemirror.quote_identifier(config.get('event_time')) -%}
    {%- set in_batch = event_time ~ " >= '" ~ batch.event_time_start ~ "' and " ~ event_time
        ~ " < '" ~ batch.event_time_end ~ "'" -%}
    {%- set outside = "lakemirror: model " ~ model.name ~ ", batch " ~ batch.id
        ~ ": a row's event_time " ~ config.get('event_time') ~ " is NULL or outside the batch ["
        ~ batch.event_time_start ~ ", " ~ batch.event_time_end
        ~ "). A microbatch model may write only rows of the batch it runs for" -%}
    insert into table {{ target }} replace where {{ in_batch }}
    select * from (
        {{ lakemirror._select_by_name(target, arg_dict['temp_relation']) }}
    ) as batch_rows
    where case when {{ in_batch }} then true
        else raise_error('{{ lakemirror._sql_escape(outside) }}') end
{% endmacro %}
