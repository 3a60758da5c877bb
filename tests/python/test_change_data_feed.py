"""Delta's change data feed on mirrored tables (`delta_features: [changeDataFeed]`).

On both engines, a mirror model with the feed on takes a randomized change stream over
several runs; each run's feed, read back with Spark's change feed reader and with delta-rs's
`load_cdf`, must equal the net change the reference model gives between the run's states
(inserts, deletes, and updates as the old row deleted and the new one inserted). The embedded
engine (Sail) cannot commit to a table whose feed is on: its session hands a mirror or
apply_changes model's writes to delta-rs (engine.delta_rs_writes), and refuses the feed for
any other model.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.delta.rows import read_table
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService

from conftest import (
    ENGINES,
    SPARK_UNAVAILABLE,
    Zone,
    mirror_setup,
    owner_session,
    spark_session,
    track_presence,
)
from test_delta_settings import configure
from test_inspect_doctor import delta_table, run_cli
from test_history import FILES as HISTORY_FILES, SCHEMA as HISTORY_SCHEMA, VERSIONS
from test_history import check as check_history
from test_mirror_changes import built

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
# The first version whose commit the feed covers: on the embedded engine, version 0 is the
# empty table the engine creates before a metadata commit turns the feed on.
FEED_START = {"embedded": 1, "spark": 0}

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
    target: str
    expected: list[Counter[Change]] = field(default_factory=list)
    versions: dict[str, list[int]] = field(default_factory=dict)

    def location(self, table: str) -> str:
        return str(self.service.settings.warehouse / "dbo" / table)


@pytest.fixture(scope="module", params=ENGINES)
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    zone, service = mirror_setup(tmp_path_factory.mktemp("change_data_feed"), request.param)
    configure(service, ["dbo:"] + [f"  dbo__{name}: {config}" for name, config in TABLES.items()])
    runs = Runs(service, request.param)
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
def test_sparks_change_feed_reader_equals_the_changes_each_run_applied(runs, table):
    path = runs.location(table).replace("'", "\\'")
    feed = spark_session().sql(
        f"select id, v, _change_type, _commit_version "
        f"from table_changes_by_path('{path}', {FEED_START[runs.target]})").collect()
    assert per_run(runs, table, [row.asDict() for row in feed]) == runs.expected
    assert all(runs.expected), "every run changes the table"


@pytest.mark.slow
@pytest.mark.parametrize("table", list(TABLES))
def test_delta_rs_load_cdf_reads_the_same_changes(runs, table):
    feed = pa.table(DeltaTable(runs.location(table)).load_cdf(
        starting_version=FEED_START[runs.target]).read_all())
    assert per_run(runs, table, feed.select(["id", "v", "_change_type", "_commit_version"])
                   .to_pylist()) == runs.expected


@pytest.mark.slow
@pytest.mark.parametrize("table", list(TABLES))
def test_the_feed_adds_no_feature_the_default_readers_refuse(runs, table):
    """delta-rs lists variantType in every table-features protocol it writes itself; the
    embedded engine's commits keep the protocol to what the model asks."""
    protocol = DeltaTable(runs.location(table)).protocol()
    features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    assert "variantType" not in features
    assert ("changeDataFeed" in features) == (protocol.min_writer_version == 7)


@pytest.mark.slow
def test_the_embedded_engine_refuses_the_feed_for_a_model_it_cannot_hand_to_delta_rs(tmp_path):
    """Only a mirror or apply_changes model's writes go through delta-rs; a `table` model
    asking for the feed is refused before anything is written, naming the fix."""
    zone, service = mirror_setup(tmp_path)
    publish(zone, [[{"id": 1, "v": "a", M: INSERT}]], first=1)
    assert {status.status for status in service.run()} == {"replicating"}
    models = service.settings.project_dir / "models/user"
    models.mkdir(parents=True)
    (models / "feed_table.sql").write_text(
        "{{ config(materialized='table', tblproperties={'delta.enableChangeDataFeed': true}) }}\n"
        "select id, v from {{ ref('dbo__orders') }}")
    [failed] = built(service)
    assert failed.name == "feed_table"
    assert ("model feed_table: the embedded engine (Sail) cannot write the Delta table "
            "feature 'changeDataFeed'.") in failed.message
    assert ("To use changeDataFeed, run this model on a Delta Lake on Spark target (spark or "
            "connect) or Databricks.") in failed.message
    assert not DeltaTable.is_deltatable(str(service.settings.warehouse / "analytics"
                                            / "feed_table"))


@pytest.mark.slow
def test_a_table_whose_feed_another_writer_turned_on_gets_its_feed_written(tmp_path):
    """The model's config says nothing of the feed; the table has it (turned on by a Spark
    job, here by delta-rs): the embedded engine's next MERGE writes the feed, and the engine
    still reads the table (its columns made nullable: Sail 0.7 cannot read delta-rs's text
    in a NOT NULL column)."""
    zone, service = mirror_setup(tmp_path)
    publish(zone, [[{"id": 1, "v": "a", M: INSERT}, {"id": 2, "v": "b", M: INSERT}]], first=1)
    assert {status.status for status in service.run()} == {"replicating"}
    location = service.settings.warehouse / "dbo" / "orders"
    DeltaTable(str(location)).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    turned_on = DeltaTable(str(location)).version()
    publish(zone, [[{"id": 2, "v": None, M: DELETE}, {"id": 1, "v": "a2", M: UPDATE}]], first=2)
    assert {status.status for status in service.run()} == {"replicating"}
    feed = DeltaTable(str(location)).load_cdf(starting_version=turned_on).read_all()
    assert sorted(pa.table(feed).select(["_change_type", "id", "v"]).to_pylist(),
                  key=str) == sorted([
        {"_change_type": "delete", "id": 2, "v": "b"},
        {"_change_type": "delete", "id": 1, "v": "a"},
        {"_change_type": "insert", "id": 1, "v": "a2"}], key=str)
    rows = owner_session().read.format("delta").load(str(location)).select("id", "v").collect()
    assert sorted(tuple(row) for row in rows) == [(1, "a2")]


@pytest.mark.slow
def test_a_new_column_reaches_a_feed_table_on_the_embedded_engine(tmp_path):
    """A column the publisher adds (a hostile name, too) is added by a metadata commit; a
    full refresh, which Sail cannot write there, is refused with nothing written."""
    zone, service = mirror_setup(tmp_path)
    configure(service, ["dbo:", "  dbo__orders: {+delta_features: [changeDataFeed]}"])
    publish(zone, [[{"id": 1, "v": "a", M: INSERT}]], first=1)
    assert {status.status for status in service.run()} == {"replicating"}
    odd = "x`y'); drop table z --"
    wide = pa.schema([("id", pa.int64()), ("v", pa.string()), (odd, pa.string()), (M, pa.int32())])
    zone.write("Orders", 2, [{"id": 2, "v": "b", odd: "o", M: INSERT}], wide)
    assert {status.status for status in service.run()} == {"replicating"}
    location = service.settings.warehouse / "dbo" / "orders"
    rows = read_table(location).select(["id", "v", odd])
    assert sorted(rows.to_pylist(), key=str) == [{"id": 1, "v": "a", odd: None},
                                                 {"id": 2, "v": "b", odd: "o"}]
    version = DeltaTable(str(location)).version()
    [failed] = built(service, "run", "--full-refresh", "--select", "dbo__orders")
    assert ("the embedded engine (Sail) cannot replace dbo.orders, whose change data feed is "
            "on") in failed.message and "Run this model on a Delta Lake on Spark" in failed.message
    assert DeltaTable(str(location)).version() == version


@pytest.mark.slow
def test_a_history_model_with_the_feed_on_keeps_every_version(tmp_path):
    """test_history's hand-written versions, one file a run, with the feed on the mirror and
    its history model on the embedded engine: each new version is a feed insert, and each
    version ended later an update (its pre- and post-image)."""
    zone, service = mirror_setup(tmp_path)
    configure(service, ["dbo:", "  +delta_features: [changeDataFeed]"])
    service.settings = replace(service.settings, dbt_vars={"lakemirror_history": ["dbo.t"]})
    folder = zone.table("T", ["id"])
    (folder / "_metadata.json").write_text(
        '{"keyColumns": ["id"], "ConditionalUpdateColumn": "c"}')
    for number, rows in enumerate(HISTORY_FILES, start=1):
        zone.write("T", number, rows, HISTORY_SCHEMA)
        assert {status.status for status in service.run()} == {"replicating"}
        check_history(service, number)
    feed = DeltaTable(str(service.settings.warehouse / "dbo" / "t__history")).load_cdf(
        starting_version=1).read_all()
    changes = Counter(pa.table(feed).column("_change_type").to_pylist())
    assert changes == {"insert": len(VERSIONS),
                       "update_preimage": sum(stop is not None for *_, stop, _ in VERSIONS),
                       "update_postimage": sum(stop is not None for *_, stop, _ in VERSIONS)}


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
