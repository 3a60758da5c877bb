"""The one data test of each generated model (lakemirror.mirror_rows on a mirror model,
lakemirror.history_rows on a history model) passes on a healthy table and fails on each rule
broken, its failing rows naming the problem; hostile key names are quoted, never SQL.
The broken tables are made through the engine, as no landing zone can make most of them."""

import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakemirror.dbt_runner import dbt_invoke
from lakemirror.codegen.quoting import dbt_yaml_text
from lakemirror.environment import read_settings
from lakemirror.reference import ROW_MARKER
from lakemirror.run.dbt import engine_vars
from lakemirror.service import engine_address

from conftest import copy_project, mirror_setup, owner_session

pytestmark = pytest.mark.slow
M = ROW_MARKER
HOSTILE_KEYS = ["a`b", "{{ k }}'\"", "{% if %}"]
# table: (keys, its rows' problems after tampering with its mirrored and its history table)
TABLES = {
    "Healthy": (["id"], Counter(), Counter()),
    "Hostile": (HOSTILE_KEYS, Counter({"duplicate _lm_position": 1, "null key": 1}),
                Counter()),
    "Versions": (["id"], Counter(), Counter({"duplicate _lm_valid_from": 1,
                                             "null _lm_is_deleted": 1})),
}


def schema(keys):
    return pa.schema([(key, pa.string()) for key in keys] + [("v", pa.int64()), (M, pa.int32())])


def rows(keys, values, marker):
    return [{key: f"k{value}" for key in keys} | {"v": value, M: marker} for value in values]


def tamper(spark, path, where, changes):
    """Append to the Delta table at `path` its rows matching `where`, with `changes` (column:
    SQL expression), as something other than lakemirror would."""
    from pyspark.sql.functions import expr

    found = spark.read.format("delta").load(str(path)).where(where)
    for column, value in changes.items():
        found = found.withColumn(column, expr(value))
    found.write.format("delta").mode("append").save(str(path))


def break_tables(warehouse):
    """Give each table of TABLES the problems it lists, one failing row each."""
    spark = owner_session()
    try:
        hostile = warehouse / "dbo" / "hostile"
        tamper(spark, hostile, "v = 1", {})  # a second row at its position
        tamper(spark, hostile, "v = 2", {HOSTILE_KEYS[1]: "cast(null as string)",
                                         "_lm_position": "cast(7 as bigint)"})
        history = warehouse / "dbo" / "versions__history"
        tamper(spark, history, "v = 1", {})
        tamper(spark, history, "v = 3", {"_lm_valid_from": "cast(8 as bigint)",
                                         "_lm_is_deleted": "cast(null as boolean)"})
    finally:
        spark.stop()


def stored_failures(project, warehouse, command, *selection):
    """`dbt <command> --store-failures` on `project`: the problems of each failing test's rows,
    by test name."""
    env = read_settings()
    results = dbt_invoke(command, project, profiles_dir=project / "profiles", target="embedded",
                         engine="embedded", warehouse=str(warehouse),
                         run_vars=engine_vars(engine_address(env), env.home),
                         extra_args=("--store-failures", *selection))
    return {result.name: Counter(pq.read_table(warehouse / "dbt_test__audit" / result.name)
                                 .column("problem").to_pylist())
            for result in results if result.status == "fail"}


def test_each_broken_rule_fails_the_one_test_of_its_model_and_a_healthy_table_passes(
        tmp_path):
    zone, service = mirror_setup(tmp_path)
    project = service.settings.project_dir / "dbt_project.yml"
    project.write_text(project.read_text().replace(
        "vars:\n", "vars:\n  lakemirror_history: ['*']\n"))
    for folder, (keys, _, _) in TABLES.items():
        zone.table(folder, None)
        (zone.root / folder / "_metadata.json").write_text(json.dumps({"keyColumns": keys}))
        zone.write(folder, 1, rows(keys, [1, 2, 3], 0), schema(keys))
    statuses = {status.table: status for status in service.run()}
    assert {table: status.status for table, status in statuses.items()} == dict.fromkeys(
        map(str.lower, TABLES), "replicating"), statuses

    break_tables(service.settings.warehouse)
    for folder, (keys, _, _) in TABLES.items():  # something new, so the models and tests run
        zone.write(folder, 2, rows(keys, [4], 0), schema(keys))
    statuses = {status.table: status for status in service.run()}
    assert {table: status.status for table, status in statuses.items()} == {
        "healthy": "replicating", "hostile": "degraded", "versions": "degraded"}
    assert "lakemirror_mirror_rows_dbo__hostile (fail" in statuses["hostile"].error
    assert "lakemirror_history_rows_dbo__versions__history (fail" in statuses[
        "versions"].error
    assert "mirror_rows" not in statuses["versions"].error

    # One test node per model, each run; each problem is a failing row naming it.
    results = json.loads((service.settings.project_dir / "target/run_results.json").read_text())
    tests = sorted((result["unique_id"].split(".")[2], result["status"])
                   for result in results["results"] if result["unique_id"].startswith("test."))
    assert tests == [
        ("lakemirror_history_rows_dbo__healthy__history", "pass"),
        ("lakemirror_history_rows_dbo__hostile__history", "pass"),
        ("lakemirror_history_rows_dbo__versions__history", "fail"),
        ("lakemirror_mirror_rows_dbo__healthy", "pass"),
        ("lakemirror_mirror_rows_dbo__hostile", "fail"),
        ("lakemirror_mirror_rows_dbo__versions", "pass")]
    assert stored_failures(service.settings.project_dir, service.settings.warehouse,
                           "test") == {
        "lakemirror_mirror_rows_dbo__hostile": TABLES["Hostile"][1],
        "lakemirror_history_rows_dbo__versions__history": TABLES["Versions"][2]}


BROKEN_ROWS = """{{ config(materialized='table') }}
select * from values
    (cast(null as string), 1, 1, true, false),
    ('x', 2, 2, true, false),
    ('y', 2, 2, true, false),
    ('z', cast(null as int), cast(null as int), true, false),
    ('w', 5, 5, cast(null as boolean), cast(null as boolean))
    as broken (`a``b`, _lm_position, _lm_valid_from, _lm_is_current, _lm_is_deleted)
"""


def test_every_check_of_both_tests_names_its_problem_on_rows_no_delta_table_allows(tmp_path):
    """NULL positions and NULL `_lm_is_current` are refused by the mirrored tables' schema, so
    the tests run on a table of such rows here; a position with two problems names both."""
    project = copy_project(tmp_path / "project")
    (project / "models/user").mkdir(parents=True)
    (project / "models/user/broken_rows.sql").write_text(BROKEN_ROWS)
    (project / "models/user/broken_rows.yml").write_text(f"""version: 2
models:
  - name: broken_rows
    data_tests:
      - lakemirror.mirror_rows:
          name: mirror_rows_of_broken_rows
          arguments:
            keys: [{dbt_yaml_text("a`b")}]
      - lakemirror.history_rows:
          name: history_rows_of_broken_rows
""")
    assert stored_failures(project, tmp_path / "warehouse", "build", "--select",
                           "broken_rows") == {
        "mirror_rows_of_broken_rows": Counter({
            "null key": 1, "duplicate _lm_position": 1, "null _lm_position": 1}),
        "history_rows_of_broken_rows": Counter({
            "duplicate _lm_valid_from": 1, "null _lm_valid_from": 1,
            "null _lm_is_current, null _lm_is_deleted": 1})}
