"""dbt's on_schema_change on analytics engineers' own incremental models: each model is run,
its select changed, and run again; the Delta table is then compared with what dbt promises,
for the append, merge and insert_overwrite strategies. Rows always land by column name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.dbt_runner import dbt_invoke
from lakemirror.node_result import NodeResult
from lakemirror.run.dbt import engine_vars
from lakemirror.service import engine_address
from lakemirror.environment import read_settings

from conftest import ENGINES, as_multiset, copy_project

pytestmark = pytest.mark.slow

STRATEGIES = ["append", "merge"]
ABC = "select id, a, b from values (1, 'a1', 10), (2, 'a2', 20) as v (id, a, b)"
# The model's second version: `a` gone, `c` new, the select reordered.
CB_ID = "select c, b, id from values (2, 21, 'c2'), (3, 31, 'c3') as v (id, b, c)"
NAMES = ("select id, first_name, last_name from values (1, 'Grace', 'Hopper') "
         "as v (id, first_name, last_name)")
NAMES_REORDERED = ("select last_name, id, first_name from values (2, 'Ada', 'Lovelace') "
                   "as v (id, first_name, last_name)")


@dataclass(frozen=True)
class Model:
    """One test model: its config and its select before and after the schema change."""

    config: str
    before: str
    after: str


def incremental(strategy: str, on_schema_change: str, **extra: str) -> str:
    options = {"incremental_strategy": repr(strategy), "on_schema_change": repr(on_schema_change),
               **({"unique_key": "'id'"} if strategy == "merge" else {}), **extra}
    return ", ".join(f"{key}={value}" for key, value in options.items())


MODELS = {
    **{f"{strategy}_{mode}": Model(incremental(strategy, mode), ABC, CB_ID)
       for strategy in STRATEGIES
       for mode in ("ignore", "fail", "append_new_columns")},
    **{f"{strategy}_sync_all_columns": Model(
        incremental(strategy, "sync_all_columns"), ABC,
        "select c, cast(b as bigint) as b, id "
        "from values (2, 21, 'c2'), (3, 31, 'c3') as v (id, b, c)")
       for strategy in STRATEGIES},
    **{f"{strategy}_reordered": Model(incremental(strategy, "ignore"), NAMES, NAMES_REORDERED)
       for strategy in [*STRATEGIES, "insert_overwrite"]},
    "merge_options": Model(
        incremental("merge", "append_new_columns", merge_exclude_columns="['created_by']",
                    incremental_predicates="['dbt_internal_dest.id > 1']"),
        "select id, val, created_by from values (1, 'x', 'v1'), (2, 'y', 'v1') "
        "as v (id, val, created_by)",
        "select created_by, val, id from values (1, 'x2', 'v2'), (2, 'y2', 'v2'), (3, 'z', 'v2') "
        "as v (id, val, created_by)"),
    "merge_unknown_update_column": Model(
        incremental("merge", "ignore", merge_update_columns="['nope']"), ABC, ABC),
}


@dataclass
class Runs:
    """The warehouse after three `dbt run`s: models before, after, after again (unchanged)."""

    warehouse: Path
    results: list[dict[str, NodeResult]] = field(default_factory=list)
    versions: list[dict[str, int]] = field(default_factory=list)

    def table(self, name: str, run: int = 1) -> pa.Table:
        """The model's table as run `run` (0-based) left it."""
        return DeltaTable(str(self.warehouse / "analytics" / name),
                          version=self.versions[run][name]).to_pyarrow_table()

    def history(self, name: str) -> list[dict[str, Any]]:
        return DeltaTable(str(self.warehouse / "analytics" / name)).history()


@pytest.fixture(scope="module", params=ENGINES)
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp(f"on_schema_change_{request.param}")
    project = copy_project(root / "project")
    models = project / "models" / "user"
    models.mkdir(parents=True)
    runs = Runs(root / "warehouse")
    env = read_settings()
    engine = engine_vars(engine_address(env), env.home) if request.param == "embedded" else {}
    for version in ("before", "after", "after"):
        for name, model in MODELS.items():
            sql = getattr(model, version)
            (models / f"{name}.sql").write_text(
                f"{{{{ config(materialized='incremental', {model.config}) }}}}\n{sql}\n")
        results = dbt_invoke("run", project, profiles_dir=project / "profiles",
                             target=request.param, engine=request.param,
                             warehouse=str(runs.warehouse), run_vars=engine,
                             extra_args=("--select", "user", "--log-level", "none"))
        runs.results.append({result.unique_id.rsplit(".", 1)[-1]: result
                             for result in results})
        runs.versions.append({name: DeltaTable(str(runs.warehouse / "analytics" / name)).version()
                              for name in MODELS})
    return runs


def succeeded(runs: Runs, name: str) -> bool:
    return all(run[name].status == "success" for run in runs.results)


def assert_table(runs: Runs, name: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
    """The model ran every time and its table had `columns` and `rows` after the change."""
    assert succeeded(runs, name), [run[name].message for run in runs.results]
    table = runs.table(name)
    assert table.column_names == columns
    assert as_multiset(table.to_pylist()) == as_multiset(rows)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_ignore_keeps_the_table_schema_and_writes_by_name(runs, strategy):
    expected = {
        "append": [{"id": 1, "a": "a1", "b": 10}, {"id": 2, "a": "a2", "b": 20},
                   {"id": 2, "a": None, "b": 21}, {"id": 3, "a": None, "b": 31}],
        # A matched row keeps the value of a column the model no longer selects.
        "merge": [{"id": 1, "a": "a1", "b": 10}, {"id": 2, "a": "a2", "b": 21},
                  {"id": 3, "a": None, "b": 31}],
    }[strategy]
    assert_table(runs, f"{strategy}_ignore", ["id", "a", "b"], expected)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_fail_stops_the_model_and_leaves_the_table_alone(runs, strategy):
    name = f"{strategy}_fail"
    assert runs.results[0][name].status == "success"
    assert runs.results[1][name].status == "error"
    assert "out of sync" in runs.results[1][name].message
    assert "Source columns not in target: [<SparkColumn c" in runs.results[1][name].message
    assert runs.versions[1][name] == runs.versions[0][name] == 0
    assert as_multiset(runs.table(name).to_pylist()) == as_multiset(
        [{"id": 1, "a": "a1", "b": 10}, {"id": 2, "a": "a2", "b": 20}])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_append_new_columns_adds_new_and_keeps_removed_columns(runs, strategy):
    expected = {
        "append": [{"id": 1, "a": "a1", "b": 10, "c": None},
                   {"id": 2, "a": "a2", "b": 20, "c": None},
                   {"id": 2, "a": None, "b": 21, "c": "c2"},
                   {"id": 3, "a": None, "b": 31, "c": "c3"}],
        # A matched row keeps the value of a column the model no longer selects.
        "merge": [{"id": 1, "a": "a1", "b": 10, "c": None},
                  {"id": 2, "a": "a2", "b": 21, "c": "c2"},
                  {"id": 3, "a": None, "b": 31, "c": "c3"}],
    }[strategy]
    assert_table(runs, f"{strategy}_append_new_columns", ["id", "a", "b", "c"], expected)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sync_all_columns_drops_adds_and_retypes_keeping_history(runs, strategy):
    name = f"{strategy}_sync_all_columns"
    expected = {
        "append": [{"id": 1, "b": 10, "c": None}, {"id": 2, "b": 20, "c": None},
                   {"id": 2, "b": 21, "c": "c2"}, {"id": 3, "b": 31, "c": "c3"}],
        "merge": [{"id": 1, "b": 10, "c": None}, {"id": 2, "b": 21, "c": "c2"},
                  {"id": 3, "b": 31, "c": "c3"}],
    }[strategy]
    assert_table(runs, name, ["id", "b", "c"], expected)
    assert runs.table(name).schema.field("b").type == pa.int64()
    # The rewrite is a new version of the same table: the first version is still readable.
    assert as_multiset(runs.table(name, run=0).to_pylist()) == as_multiset(
        [{"id": 1, "a": "a1", "b": 10}, {"id": 2, "a": "a2", "b": 20}])
    assert "CREATE" in runs.history(name)[-1]["operation"]


@pytest.mark.parametrize("strategy", [*STRATEGIES, "insert_overwrite"])
def test_reordered_select_lands_in_the_columns_of_the_same_name(runs, strategy):
    new = {"id": 2, "first_name": "Ada", "last_name": "Lovelace"}
    old = {"id": 1, "first_name": "Grace", "last_name": "Hopper"}
    assert_table(runs, f"{strategy}_reordered", ["id", "first_name", "last_name"],
                 [new] if strategy == "insert_overwrite" else [old, new])


def test_merge_keeps_exclude_columns_and_incremental_predicates(runs):
    # id 1 is outside the predicate, so it is inserted again; id 2 keeps its created_by.
    assert_table(runs, "merge_options", ["id", "val", "created_by"], [
        {"id": 1, "val": "x", "created_by": "v1"}, {"id": 1, "val": "x2", "created_by": "v2"},
        {"id": 2, "val": "y2", "created_by": "v1"}, {"id": 3, "val": "z", "created_by": "v2"}])


def test_merge_update_columns_naming_no_column_fails_clearly(runs):
    result = runs.results[1]["merge_unknown_update_column"]
    assert result.status == "error"
    assert "merge_update_columns names 'nope', which is not a column" in result.message


def test_unchanged_models_commit_only_their_rows(runs):
    """A run without a schema change adds no metadata commit (schema, nullability) to a table."""
    grown = {name: runs.versions[2][name] - runs.versions[1][name] for name in MODELS
             if succeeded(runs, name)}
    assert grown and set(grown.values()) == {1}, grown
