"""The files `lakemirror init` writes, and the configuration the docs ask an existing dbt project
to add (the same text: a test keeps docs/pages/dbt-project.md in step with these templates)."""

from __future__ import annotations

import re
from string import Template

from lakemirror.errors import ConfigError
from lakemirror.project.package_link import PACKAGE_LINK

_BLOCK = Template("""\
# --- lakemirror (docs/pages/dbt-project.md) ---------------------------------------------------
# lakemirror's package attaches the warehouse's tables, views and snapshots to each new engine
# session itself, when dbt first lists a schema.
vars:
  # Where the tables live, <warehouse>/<schema>/<table>: an absolute path.
  lakemirror_warehouse: "{{ env_var('LAKEMIRROR_WAREHOUSE', '') }}"

# lakemirror's versions of dbt-spark's macros: Delta tables at their warehouse location, MERGE
# and inserts by column name, schema changes, the mirrored tables' schemas.
dispatch:
  - macro_namespace: dbt
    search_order: [$name, lakemirror, dbt]

models:
  $name:
    +file_format: delta
    +pre-hook: "{{ lakemirror.apply_delta_settings('before') }}"
    +post-hook:
      - "{{ lakemirror.register_relation() }}"
      - "{{ lakemirror.apply_delta_settings('after') }}"
    # The generated models, one per landing-zone table: models/mirror/<schema>/.
    mirror:
      +pre-hook: "{{ lakemirror.claim_mirror_batch() }}"
      +post-hook: "{{ lakemirror.record_mirror_batch() }}"

seeds:
  $name:
    +file_format: delta
    +post-hook: "{{ lakemirror.register_relation() }}"

# dbt gives a package no hook into snapshots: register them so later sessions find them.
snapshots:
  $name:
    +file_format: delta
    +post-hook: "{{ lakemirror.register_relation() }}"
# --- end of lakemirror ------------------------------------------------------------------------
""")

_PROJECT = Template("""\
# Made by `lakemirror init`; yours to change. lakemirror needs only its block below.
name: $name
version: "1.0.0"
config-version: 2
profile: $name

model-paths: ["models"]
macro-paths: ["macros"]
seed-paths: ["seeds"]
test-paths: ["tests"]
snapshot-paths: ["snapshots"]
analysis-paths: ["analyses"]
clean-targets: ["target", "dbt_packages"]

# dbt warns of configuration that applies to no model, seed or snapshot: lakemirror's lines
# below do so in a new project (models until the first `lakemirror run`, seeds and snapshots
# until you add one). Remove these lines to hear of unused paths again.
flags:
  warn_error_options:
    silence: [UnusedResourceConfigPath]

$block""")

PACKAGES_YML = f"""\
packages:
  # lakemirror's dbt package. {PACKAGE_LINK} links to the copy installed with
  # lakemirror on this machine: lakemirror's dbt plugin makes the link when dbt runs, `dbt deps`
  # included (.gitignore keeps it out of git).
  - local: {PACKAGE_LINK}
"""

FORWARDING_MACROS = """\
{#-- lakemirror (docs/pages/dbt-project.md). dbt looks these macros up in
     your project and in dbt itself, never in a package: each hands over to lakemirror's. --#}

{#-- The `mirror` incremental strategy of the generated models. --#}
{% macro get_incremental_mirror_sql(arg_dict) %}
    {{ return(lakemirror.get_incremental_mirror_sql(arg_dict)) }}
{% endmacro %}

{#-- dbt-spark's incremental materialization: its own strategies, and any other one through
     dbt's get_incremental_<strategy>_sql. --#}
{% macro dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) %}
    {{ return(lakemirror.dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format)) }}
{% endmacro %}

{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key,
                                       incremental_predicates) %}
    {{ return(lakemirror.dbt_spark_get_incremental_sql(
        strategy, source, target, existing, unique_key, incremental_predicates)) }}
{% endmacro %}

{#-- The append and insert_overwrite strategies, inserting by column name. --#}
{% macro get_insert_into_sql(source_relation, target_relation) %}
    {{ return(lakemirror.get_insert_into_sql(source_relation, target_relation)) }}
{% endmacro %}

{% macro get_insert_overwrite_sql(source_relation, target_relation, existing_relation) %}
    {{ return(lakemirror.get_insert_overwrite_sql(
        source_relation, target_relation, existing_relation)) }}
{% endmacro %}
"""

GITIGNORE = f"""\
target/
dbt_packages/
logs/
{PACKAGE_LINK.split("/")[0]}/
.user.yml
"""


def lakemirror_block(name: str) -> str:
    """The configuration lakemirror needs in the dbt_project.yml of the project `name`."""
    return _BLOCK.substitute(name=name)


def forwarding_macros() -> str:
    """The macro file (macros/lakemirror.sql) that hands dbt's root-only macros to lakemirror."""
    return FORWARDING_MACROS


def project_yml(name: str) -> str:
    return _PROJECT.substitute(name=name, block=lakemirror_block(name))


def profiles_yml(template: str, name: str) -> str:
    """lakemirror's profiles (the engine targets), as the profile `name`: the template's own
    header comment gives way to one for the new project."""
    lines = template.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    body, count = re.subn(r"^lakemirror:[ \t]*$", f"{name}:", "".join(lines), count=1,
                          flags=re.MULTILINE)
    if not count:
        raise ConfigError("lakemirror's profiles template has no `lakemirror:` profile",
                          hint="reinstall lakemirror")
    return ("# dbt profiles of this project: lakemirror's targets (embedded, spark, "
            "connect).\n# dbt and lakemirror find this file next to dbt_project.yml; every "
            "value comes from an env var\n# (or, for the engine and the warehouse, from the "
            "dbt vars a lakemirror run gives).\n" + body)
