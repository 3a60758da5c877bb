"""`lakemirror inspect` and `lakemirror doctor --readers`, read from the Delta logs.

Expected verdicts come from the vendors' compatibility tables, not from the code under test:
column mapping needs Delta 1.2, change data feed Delta 2.0, deletion vectors are read from
Delta 2.3 and written from Delta 2.4 (docs.delta.io/3.2.1/versioning.html, Delta 2.4 release
notes), and Databricks Runtime 12.2 LTS (docs.databricks.com/delta/feature-compatibility.html).
"""

import json
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from deltalake import DeltaTable, TableFeatures, write_deltalake

from lakemirror.cli.main import cli
from lakemirror.delta import Protocol
from lakemirror.reference import ROW_MARKER

from conftest import mirror_setup

ROWS = pa.table({"id": [1, 2], "v": ["a", "b"]})


def run_cli(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def delta_table(path: Path, configuration=None) -> Path:
    write_deltalake(str(path), ROWS, configuration=configuration)
    return path


@pytest.fixture
def warehouse(tmp_path):
    """plain (1,2) with staging; cdf (1,4); mapped (2,5); dv (3,7); a model; a control table."""
    root = tmp_path / "wh"
    delta_table(root / "dbo" / "plain")
    write_deltalake(str(root / "dbo" / "plain"), ROWS, mode="append")
    delta_table(root / "_lakemirror" / "staging" / "dbo" / "plain")
    delta_table(root / "dbo" / "cdf", {"delta.enableChangeDataFeed": "true"})
    delta_table(root / "sales" / "mapped", {"delta.columnMapping.mode": "name"})
    DeltaTable(str(delta_table(root / "dbo" / "dv"))).alter.add_feature(
        TableFeatures.DeletionVectors, allow_protocol_versions_increase=True)
    delta_table(root / "analytics" / "mart")
    delta_table(root / "_lakemirror" / "control" / "relations")
    return root


def inspect_json(*args):
    result = run_cli("inspect", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def doctor_json(warehouse, readers):
    result = run_cli("doctor", "--readers", readers, "--warehouse", str(warehouse), "--json")
    tables = {table["table"]: table for table in json.loads(result.stdout)}
    return result.exit_code, {name: {verdict["profile"]: verdict for verdict in table["readers"]}
                              for name, table in tables.items()}


def test_protocol_implies_legacy_features_and_lists_table_features():
    assert Protocol(1, 2).features_to_write() == {"appendOnly", "invariants"}
    assert Protocol(1, 4).features_to_write() == {
        "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}
    assert Protocol(2, 5).features_to_read() == {"columnMapping"}
    assert Protocol(1, 6).features_to_read() == set()
    assert "identityColumns" in Protocol(2, 6).features_to_write()
    tf = Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "rowTracking"))
    assert (tf.features_to_read(), tf.features_to_write()) == (
        {"deletionVectors"}, {"deletionVectors", "rowTracking"})


def test_inspect_json_lists_every_table_grouped_by_kind(warehouse):
    tables = inspect_json("--warehouse", str(warehouse))
    assert [(table["kind"], table["table"]) for table in tables] == [
        ("mirrored", "dbo.plain"),
        ("model", "analytics.mart"), ("model", "dbo.cdf"), ("model", "dbo.dv"),
        ("model", "sales.mapped"),
        ("staging", "_lakemirror_staging.dbo__plain"),
        ("control", "_lakemirror_control.relations")]
    by_name = {table["table"]: table for table in tables}
    cdf = by_name["dbo.cdf"]
    assert (cdf["min_reader_version"], cdf["min_writer_version"]) == (1, 4)
    assert "changeDataFeed" in cdf["writer_features"]
    assert cdf["properties"] == {"delta.enableChangeDataFeed": "true"}
    assert cdf["isolation_level"] is None
    mapped = by_name["sales.mapped"]
    assert (mapped["min_reader_version"], mapped["reader_features"]) == (2, ["columnMapping"])
    dv = by_name["dbo.dv"]
    assert (dv["min_reader_version"], dv["min_writer_version"]) == (3, 7)
    assert dv["reader_features"] == ["deletionVectors"]
    assert [commit["version"] for commit in dv["history"]] == [1, 0]
    assert dv["history"][0]["operation"] == "ADD FEATURE"
    assert dv["history"][1]["metrics"]["num_added_rows"] == 2


def test_inspect_one_table_by_bare_name_or_staging_name_with_history_limit(warehouse):
    [plain] = inspect_json("Plain", "--history", "1", "--warehouse", str(warehouse))
    assert plain["table"] == "dbo.plain" and len(plain["history"]) == 1
    assert plain["history"][0]["version"] == 1
    [staging] = inspect_json("dbo__plain", "--warehouse", str(warehouse))
    assert staging["kind"] == "staging"
    [control] = inspect_json("_lakemirror_control.relations", "--warehouse", str(warehouse))
    assert control["kind"] == "control"


def test_inspect_text_is_a_block_per_table(warehouse):
    result = run_cli("inspect", "dbo.dv", "--warehouse", str(warehouse))
    assert result.exit_code == 0
    assert "== model tables ==" in result.output
    assert "protocol    reader 3, writer 7" in result.output
    assert "read: deletionVectors" in result.output
    assert "isolation   not set: the engine's default (Serializable on Delta Lake" in result.output
    assert "ADD FEATURE" in result.output


def test_inspect_text_says_a_legacy_protocol_only_implies_its_features(warehouse):
    plain = run_cli("inspect", "dbo.plain", "--warehouse", str(warehouse)).output
    assert ("features    read: -; write: appendOnly, invariants (what protocol 1/2 asks "
            "clients to support; not settings in use)") in plain
    dv = run_cli("inspect", "dbo.dv", "--warehouse", str(warehouse)).output
    assert "not settings in use" not in dv


def test_unknown_table_is_a_config_error_listing_known_tables(warehouse):
    result = run_cli("inspect", "dbo.nope", "--warehouse", str(warehouse))
    assert result.exit_code == 2
    assert "no Delta table 'dbo.nope'" in result.output and "dbo.plain" in result.output


def test_deletion_vectors_block_delta_2_2_reads_and_delta_2_3_writes(warehouse):
    code, verdicts = doctor_json(warehouse, "delta-2.2,delta-2.3,delta-2.4,dbr-10.4,dbr-12.2")
    assert code == 1
    dv = verdicts["dbo.dv"]
    assert "deletionVectors" in dv["delta-2.2"]["cannot_read"]
    assert "deletionVectors" in dv["dbr-10.4"]["cannot_read"]
    assert (dv["delta-2.3"]["can_read"], dv["delta-2.3"]["cannot_write"]) == (
        True, ["deletionVectors"])
    assert dv["delta-2.4"]["can_read"] and dv["delta-2.4"]["can_write"]
    assert dv["dbr-12.2"]["can_read"] and dv["dbr-12.2"]["can_write"]
    assert all(verdict["can_read"] and verdict["can_write"]
               for verdict in verdicts["dbo.plain"].values())


def test_column_mapping_needs_delta_1_2_and_change_data_feed_writes_need_delta_2_0(warehouse):
    code, verdicts = doctor_json(warehouse, "delta-1.0,delta-1.2,delta-2.0")
    assert code == 1
    mapped, cdf = verdicts["sales.mapped"], verdicts["dbo.cdf"]
    assert mapped["delta-1.0"]["cannot_read"][0] == "columnMapping"
    assert mapped["delta-1.2"]["can_read"] and mapped["delta-2.0"]["can_write"]
    assert (cdf["delta-1.0"]["can_read"], cdf["delta-1.0"]["cannot_write"]) == (
        True, ["changeDataFeed"])
    assert cdf["delta-1.2"]["cannot_write"] == ["changeDataFeed"]
    assert cdf["delta-2.0"]["can_write"]


def test_unwritable_alone_exits_zero_and_names_the_feature(warehouse):
    result = run_cli("doctor", "--readers", "delta-2.3", "--warehouse", str(warehouse))
    assert result.exit_code == 0, result.output
    assert "cannot write: deletionVectors" in result.output
    assert "0 of 7 tables unreadable" in result.output


def test_unknown_profile_is_a_config_error_listing_profiles(warehouse):
    result = run_cli("doctor", "--readers", "delta-2.2,spark-9", "--warehouse", str(warehouse))
    assert result.exit_code == 2
    assert "spark-9" in result.output and "dbr-12.2" in result.output


def test_doctor_without_readers_lists_the_profiles():
    result = run_cli("doctor", "--json")
    assert result.exit_code == 0
    profiles = {profile["name"]: profile for profile in json.loads(result.stdout)}
    assert {"delta-1.0", "delta-2.2", "delta-4.0", "dbr-12.2", "dbr-15.4", "delta-rs",
            "sail-0.7"} <= set(profiles)
    assert profiles["delta-2.3"]["max_reader_version"] == 3
    assert all(profile["source"] for profile in profiles.values())



def test_doctor_checks_the_default_reader_set_which_reads_deletion_vectors(warehouse):
    result = run_cli("doctor", "--warehouse", str(warehouse))
    assert result.exit_code == 0, result.output
    assert ("readers: delta-3.0, delta-4.0, dbr-14.3, fabric, duckdb, trino, delta-rs "
            "(the default set)") in result.output
    assert "new mirrored tables: deletion vectors (every reader above reads them)" in result.output
    assert ("  delta-rs   delta-rs (deltalake) 1.x through its SQL engine: QueryBuilder, "
            "lakemirror.read_table\n") in result.output
    assert "  duckdb     DuckDB's delta extension (delta_scan" in result.output
    assert "dbo.dv (model, protocol 3/7, deletion vectors)" in result.output
    assert "dbo.plain (mirrored, protocol 1/2)\n" in result.output
    assert "0 of 7 tables unreadable" in result.output
    assert "lakemirror_readers" not in result.output  # no advice: every reader reads them


def test_a_reader_set_with_delta_rs_pyarrow_keeps_copy_on_write(warehouse, monkeypatch):
    monkeypatch.setenv("LAKEMIRROR_READERS", "delta-4.0,delta-rs-pyarrow")
    result = run_cli("doctor", "--warehouse", str(warehouse))
    assert result.exit_code == 1, result.output
    assert ("new mirrored tables: copy-on-write, no deletion vectors: delta-rs-pyarrow cannot "
            "read them") in result.output
    assert "readers: delta-4.0, delta-rs-pyarrow\n" in result.output
    assert ("  delta-rs-pyarrow  delta-rs (deltalake) 1.x's pyarrow readers: "
            "DeltaTable.to_pyarrow_table, to_pyarrow_dataset, to_pandas") in result.output
    advice = result.output[result.output.index("to keep new mirrored tables copy-on-write"):]
    assert advice.startswith("to keep new mirrored tables copy-on-write for delta-rs-pyarrow, "
                             "give runs this reader set in dbt_project.yml:\n")
    pasted = "\n".join(advice.splitlines()[1:3])  # the lines a user pastes
    assert yaml.safe_load(textwrap.dedent(pasted)) == {
        "vars": {"lakemirror_readers": ["delta-4.0", "delta-rs-pyarrow"]}}
    assert "LAKEMIRROR_READERS=delta-4.0,delta-rs-pyarrow in the environment" in advice
    assert "lakemirror.read_table(warehouse, 'schema.table')" in advice
    tables = {table["table"]: table for table in json.loads(
        run_cli("doctor", "--warehouse", str(warehouse), "--json").stdout)}
    assert tables["dbo.dv"]["deletion_vectors"] and not tables["dbo.plain"]["deletion_vectors"]
    assert tables["dbo.plain"]["copy_on_write_because"] == ["delta-rs-pyarrow"]
    assert "copy_on_write_because" not in tables["dbo.dv"]  # a model: its own settings
    [pyarrow] = [reader for reader in tables["dbo.dv"]["readers"]
                 if reader["profile"] == "delta-rs-pyarrow"]
    assert pyarrow["cannot_read"] == ["deletionVectors"]
    assert pyarrow["description"].startswith("delta-rs (deltalake) 1.x's pyarrow readers")


@pytest.mark.slow
def test_inspect_and_doctor_on_a_mirrored_warehouse(tmp_path):
    zone, service = mirror_setup(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])
    zone.table("Customers", ["id"])
    zone.write("Customers", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}], schema)
    zone.write("Customers", 2, [{"id": 1, "v": "b", ROW_MARKER: 1}], schema)
    [status] = service.run()
    assert status.status == "replicating"
    tables = inspect_json("--warehouse", str(service.settings.warehouse))
    names = {(table["kind"], table["table"]) for table in tables}
    assert {("mirrored", "dbo.customers"), ("staging", "_lakemirror_staging.dbo__customers"),
            ("control", "_lakemirror_control.relations"),
            ("control", "_lakemirror_control.mirror_batches")} <= names
    [customers] = inspect_json("customers", "--warehouse", str(service.settings.warehouse))
    assert customers["history"] and customers["history"][0]["operation"]
    result = run_cli("doctor", "--readers", "sail-0.7,delta-rs,dbr-12.2",
                     "--warehouse", str(service.settings.warehouse))
    assert result.exit_code == 0, result.output


def test_the_polars_profile_says_what_polars_reads(warehouse):
    """The profile against polars itself: it reads the tables the profile says it reads (the
    one with deletion vectors among them) and refuses the others (column mapping)."""
    import polars as pl

    _, verdicts = doctor_json(warehouse, "polars")
    read = {}
    for name in ("dbo.plain", "dbo.cdf", "dbo.dv", "sales.mapped", "analytics.mart"):
        try:
            read[name] = pl.read_delta(str(warehouse.joinpath(*name.split(".")))).height >= 2
        except Exception as error:  # polars raises delta-rs's DeltaProtocolError
            assert "not support" in str(error), error
            read[name] = False
    assert read == {name: verdicts[name]["polars"]["can_read"] for name in read}
    assert not read["sales.mapped"] and read["dbo.dv"]
