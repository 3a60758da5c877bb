{#-- Whether lakemirror's run says this mirror model's table has nothing to apply: nothing staged
     now, everything staged applied by its last run, and the project unchanged since (the var
     lakemirror_quiet_relations, python/lakemirror/idle.py, the test an idle run passes, for
     one table). Such a model then claims, MERGEs and records nothing: a build sends it its
     temporary view and one statement saying so. Never under plain dbt, nor for a first build
     or a full refresh. Should the run be wrong, nothing is applied nor recorded, and the next
     run applies the batch. --#}
{% macro _nothing_to_apply() %}
    {{ return(execute and is_incremental() and lakemirror._mirror_relation_name()
        in var('lakemirror_quiet_relations', [])) }}
{% endmacro %}
