"""Delta's change data feed on mirrored tables (`delta_features: [changeDataFeed]`).

On Delta Lake on Spark, a mirror model with the feed on takes a randomized change stream over
several runs; each run's feed, read back with Spark's `table_changes` and with delta-rs's
`load_cdf`, must equal the net change the reference model gives between the run's states
(inserts, deletes, and updates as the old row deleted and the new one inserted). The embedded engine cannot write the
feed (it refuses every write to such a table, after writing its data files): lakemirror refuses
the model first, whether its config or the table itself turns the feed on.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService

from conftest import SPARK_UNAVAILABLE, Zone, mirror_setup, track_presence
from test_delta_settings import configure
from test_inspect_doctor import delta_table, run_cli

M = ROW_MARKER
ROWS = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4
# One table with deletion vectors (the default), one copy-on-write: Delta writes the feed of
# a MERGE differently for each.
TABLES = {
    "orders": "{+delta_features: [changeDataFeed]}",
    "orders_cow": "{+delta_features: [changeDataFeed], "
                  "+lakemirror_readers: [delta-4.0, delta-rs-pyarrow]}",
}
RUNS = 4

on_spark = pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                              reason=f"spark target skipped: {SPARK_UNAVAILABLE}")
Change = tuple[str, int, str]  # (_change_type, id, v)


def change_files(rng: random.Random, sequence: int, present: set[int]) -> list[list[dict[str, Any]]]:
    """A run's files: inserts of absent keys, updates and upserts of present ones, deletes,
    a key deleted and inserted again in the same file, all with values naming the file."""
    files = []
    for part in range(2):
        number = sequence * 10 + part
        rows: list[dict[str, Any]] = []
        for key in rng.sample(range(40), 12):
            value = f"v{key}-{number}"
            if key in present:
                marker = rng.choice([UPDATE, UPSERT, DELETE, DELETE])
                if marker == DELETE and rng.random() < 0.3:  # re-inserted in the same file
                    rows.append({"id": key, "v": None, M: DELETE})
                    marker = INSERT
            else:
                marker = rng.choice([INSERT, UPSERT, DELETE])  # deleting an absent key: no-op
            rows.append({"id": key, "v": value if marker != DELETE else None, M: marker})
            track_presence(present, key, marker)
        files.append(rows)
    return files


def net_changes(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Counter[Change]:
    """The change feed a run taking the table from `before` to `after` must hold. The mirror's
    MERGE replaces a key's rows (a key may hold several), so an update reads as the old row
    deleted (its pre-image) and the new one inserted (its post-image), in the same commit."""
    old = {row["id"]: row["v"] for row in before}
    new = {row["id"]: row["v"] for row in after}
    changes: Counter[Change] = Counter()
    for key in old.keys() | new.keys():
        if key not in new:
            changes[("delete", key, old[key])] += 1
        elif key not in old:
            changes[("insert", key, new[key])] += 1
        elif old[key] != new[key]:
            changes[("delete", key, old[key])] += 1
            changes[("insert", key, new[key])] += 1
    return changes


@dataclass
class Runs:
    """The warehouse after the runs: each run's expected changes and table versions."""

    service: MirrorService
    expected: list[Counter[Change]] = field(default_factory=list)
    versions: dict[str, list[int]] = field(default_factory=dict)

    def location(self, table: str) -> str:
        return str(self.service.settings.warehouse / "dbo" / table)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    zone, service = mirror_setup(tmp_path_factory.mktemp("change_data_feed"), "spark")
    configure(service, ["dbo:"] + [f"  dbo__{name}: {config}" for name, config in TABLES.items()])
    runs = Runs(service)
    rng = random.Random(45)
    present: set[int] = set()
    applied: list[list[dict[str, Any]]] = []
    for run in range(1, RUNS + 1):
        files = change_files(rng, run, present)
        publish(zone, files, first=len(applied) + 1)
        before = apply_changes(applied, ["id"])
        applied.extend(files)
        runs.expected.append(net_changes(before, apply_changes(applied, ["id"])))
        statuses = service.run()
        assert {status.status for status in statuses} == {"replicating"}, \
            [status.error for status in statuses]
        for table in TABLES:
            runs.versions.setdefault(table, []).append(DeltaTable(runs.location(table)).version())
    return runs


def publish(zone: Zone, files: list[list[dict[str, Any]]], *, first: int) -> None:
    for table in TABLES:
        folder = table.capitalize()
        zone.table(folder, ["id"])
        for offset, rows in enumerate(files):
            zone.write(folder, first + offset, rows, ROWS)


def per_run(runs: Runs, table: str, feed: list[dict[str, Any]]) -> list[Counter[Change]]:
    """The feed's rows grouped by the run whose commits wrote them."""
    found: list[Counter[Change]] = [Counter() for _ in range(RUNS)]
    for row in feed:
        run = next(index for index, last in enumerate(runs.versions[table])
                   if row["_commit_version"] <= last)
        found[run][(row["_change_type"], row["id"], row["v"])] += 1
    return found


@pytest.mark.spark
@pytest.mark.slow
@on_spark
@pytest.mark.parametrize("table", list(TABLES))
def test_table_changes_equal_the_changes_each_run_applied(runs, table):
    from pyspark.sql import SparkSession

    session = SparkSession._instantiatedSession
    assert session is not None
    feed = session.sql(f"select id, v, _change_type, _commit_version "
                       f"from table_changes('dbo.{table}', 0)").collect()
    assert per_run(runs, table, [row.asDict() for row in feed]) == runs.expected
    assert all(runs.expected), "every run changes the table"


@pytest.mark.spark
@pytest.mark.slow
@on_spark
@pytest.mark.parametrize("table", list(TABLES))
def test_delta_rs_load_cdf_reads_the_same_changes(runs, table):
    feed = pa.table(DeltaTable(runs.location(table)).load_cdf(starting_version=0).read_all())
    assert per_run(runs, table, feed.select(["id", "v", "_change_type", "_commit_version"])
                   .to_pylist()) == runs.expected


@pytest.mark.slow
def test_the_embedded_engine_refuses_a_model_asking_for_the_feed_and_names_the_fix(tmp_path):
    zone, service = mirror_setup(tmp_path)
    configure(service, ["dbo:", "  dbo__orders: {+tblproperties: "
                                "{delta.enableChangeDataFeed: true}}"])
    publish(zone, [[{"id": 1, "v": "a", M: INSERT}]], first=1)
    [status] = [status for status in service.run() if status.table == "orders"]
    assert status.status == "failed"
    assert ("model dbo__orders: the embedded engine (Sail) cannot write the Delta table "
            "feature 'changeDataFeed'.") in status.error
    assert ("To use changeDataFeed, run this model on a Delta Lake on Spark target (spark or "
            "connect) or Databricks.") in status.error
    assert not DeltaTable.is_deltatable(str(service.settings.warehouse / "dbo" / "orders"))


@pytest.mark.slow
def test_the_embedded_engine_refuses_a_table_whose_feed_another_writer_turned_on(tmp_path):
    """The model's config says nothing of the feed; the table has it (turned on by a Spark
    job, here by delta-rs): the run fails that table before writing anything."""
    zone, service = mirror_setup(tmp_path)
    publish(zone, [[{"id": 1, "v": "a", M: INSERT}, {"id": 2, "v": "b", M: INSERT}]], first=1)
    assert {status.status for status in service.run()} == {"replicating"}
    location = service.settings.warehouse / "dbo" / "orders"
    DeltaTable(str(location)).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    version, files = DeltaTable(str(location)).version(), sorted(location.rglob("*"))
    publish(zone, [[{"id": 2, "v": None, M: DELETE}]], first=2)
    [status] = [status for status in service.run() if status.table == "orders"]
    assert status.status == "failed"
    assert ("model dbo__orders: dbo.orders has Delta's change data feed on "
            "(delta.enableChangeDataFeed or the changeDataFeed table feature), and the "
            "embedded engine (Sail) cannot write it; nothing was written. Run this model on a "
            "Delta Lake on Spark target (spark or connect) or Databricks.") in status.error
    assert DeltaTable(str(location)).version() == version
    assert sorted(location.rglob("*")) == files


# Who reads the feed, from the vendors' pages (Delta Lake 2.0 brought it; DuckDB's delta
# extension and polars have no reader of it) and measured (delta-rs's load_cdf, above; Sail
# ignores the readChangeFeed option and returns the current rows).
FEED_READERS = {"delta-1.2": False, "delta-2.0": True, "delta-4.0": True, "dbr-10.4": True,
                "trino": True, "duckdb": False, "polars": False, "delta-rs": True,
                "sail-0.7": False}


def test_doctor_says_which_readers_read_a_tables_change_data_feed(tmp_path):
    delta_table(tmp_path / "dbo" / "feed", {"delta.enableChangeDataFeed": "true"})
    delta_table(tmp_path / "dbo" / "plain")
    readers = ",".join(FEED_READERS)
    result = run_cli("doctor", "--readers", readers, "--warehouse", str(tmp_path), "--json")
    tables = {table["table"]: table for table in json.loads(result.stdout)}
    assert (tables["dbo.feed"]["change_data_feed"], tables["dbo.plain"]["change_data_feed"]) \
        == (True, False)
    assert {reader["profile"]: reader["reads_change_feed"]
            for reader in tables["dbo.feed"]["readers"]} == FEED_READERS
    assert not any(reader["reads_change_feed"] for reader in tables["dbo.plain"]["readers"])
    # A feed is written by writers of changeDataFeed only.
    assert {reader["profile"] for reader in tables["dbo.feed"]["readers"]
            if "changeDataFeed" in reader["cannot_write"]} == {"delta-1.2", "duckdb", "sail-0.7"}
    text = run_cli("doctor", "--readers", readers, "--warehouse", str(tmp_path)).output
    assert ("  change data feed on: read by delta-2.0, delta-4.0, dbr-10.4, trino, delta-rs; "
            "not by delta-1.2, duckdb, polars, sail-0.7") in text
    assert text.count("change data feed on") == 1
