{#-- The reader profiles of `lakemirror doctor` as the macros need them: the default
     reader set (the clients of today) and, per profile, whether it reads a table with
     deletion vectors.
     Rendered from python/lakemirror/delta/readers.py by
     `python -m lakemirror.generated_macros`: edit it there. --#}
{% macro delta_reader_profiles() %}
    {{ return({
        'default': ['delta-3.0', 'delta-4.0', 'dbr-14.3', 'fabric', 'duckdb', 'trino', 'delta-rs'],
        'reads_deletion_vectors': {
            'delta-1.0': false, 'delta-1.2': false, 'delta-2.0': false, 'delta-2.2': false,
            'delta-2.3': true, 'delta-2.4': true, 'delta-3.0': true, 'delta-3.2': true,
            'delta-4.0': true, 'dbr-10.4': false, 'dbr-12.2': true, 'dbr-13.3': true,
            'dbr-14.3': true, 'dbr-15.4': true, 'fabric': true, 'duckdb': true, 'trino': true,
            'delta-rs': true, 'delta-rs-pyarrow': false, 'polars': true, 'sail-0.7': true,
        },
    }) }}
{% endmacro %}
