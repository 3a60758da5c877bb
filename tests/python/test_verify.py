"""`lakemirror verify` end to end on the embedded engine: a mirror and its history table
verified ok; rows deleted, added and changed behind lakemirror's back (with deltalake, and
through the engine) each reported with their key, kind and column, exit 1; verify after
staging compaction, which keeps the changes of a tampered mirror; source row counts; unknown
tables, a path that is no warehouse and hostile column names; a staged column the mirror
lacks, and a batch a run applied without recording it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable, write_deltalake

from lakemirror.cli.main import cli
from lakemirror.delta.rows import read_table
from lakemirror.landing import POSITION, ROWS_PER_FILE, discover_tables
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table

from conftest import mirror_setup, owner_session
from test_history import FILES as CONDITIONAL_FILES
from test_history import SCHEMA as CONDITIONAL_SCHEMA

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64()), (M, pa.int32())])
INS, UPD, DEL, UPS = 0, 1, 2, 4
FILES = [
    [{"id": i, "v": f"v{i}", "n": i, M: INS} for i in range(1, 7)],
    [{"id": 1, "v": "u1", "n": None, M: UPD}, {"id": 2, "v": None, "n": None, M: DEL},
     {"id": 7, "v": "v7", "n": 7, M: UPS}, {"id": 1, "v": "u1b", "n": 10, M: UPS}],
]
ROWS = 6  # ids 1, 3, 4, 5, 6, 7
VERSIONS = 9  # ids 1 to 7 inserted or upserted, id 1 updated twice


def at(file: int, row: int) -> int:
    return file * ROWS_PER_FILE + row


def verify(warehouse: Path | str, *args: str) -> tuple[int, str]:
    """`lakemirror verify`'s exit code and standard output."""
    result = CliRunner().invoke(cli, ["verify", "--warehouse", str(warehouse), *args])
    return result.exit_code, result.stdout


def verified(warehouse: Path | str, *args: str) -> tuple[int, dict[str, Any]]:
    """`lakemirror verify --json`'s exit code and its one JSON document, by table name."""
    code, output = verify(warehouse, "--json", *args)
    document = json.loads(output, parse_constant=strict_json)
    document["tables"] = {table["name"]: table for table in document["tables"]}
    return code, document


def strict_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def differences(proof: dict[str, Any], part: str = "mirror") -> set[tuple[Any, ...]]:
    """A proof's sample differences: (kind, key, position, changed columns)."""
    return {(sample["kind"], tuple(sample["key"].items()), sample["position"],
             tuple((name, values["expected"], values["actual"])
                   for name, values in sample["columns"].items()))
            for sample in proof[part]["samples"]}


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mirror of dbo.t (keyColumns id) and of test_history.py's dbo.c (with a
    ConditionalUpdateColumn), with their history tables, made by four runs."""
    root = tmp_path_factory.mktemp("mirrored")
    zone, service = mirror_setup(root)
    service.settings = replace(service.settings, dbt_vars={"lakemirror_history": ["*"]})
    zone.table("T", ["id"])
    (zone.table("C", None) / "_metadata.json").write_text(
        '{"keyColumns": ["id"], "ConditionalUpdateColumn": "c"}')
    for sequence, rows in enumerate(CONDITIONAL_FILES, 1):
        zone.write("C", sequence, rows, CONDITIONAL_SCHEMA)
        if sequence <= len(FILES):
            zone.write("T", sequence, FILES[sequence - 1], SCHEMA)
        assert {s.status for s in service.run()} == {"replicating"}
    return service.settings.warehouse


@pytest.fixture
def warehouse(mirrored: Path, tmp_path: Path) -> Path:
    """A copy of the mirrored warehouse, for one test to tamper with."""
    return Path(shutil.copytree(mirrored, tmp_path / "warehouse"))


@pytest.mark.slow
def test_a_mirror_and_its_history_verify_ok_as_text_and_as_one_json_document(warehouse):
    code, text = verify(warehouse)
    assert code == 0
    assert text.splitlines()[0].startswith("dbo.c: ok: 4 rows match their staged changes")
    assert text.splitlines()[2] == (f"dbo.t: ok: {ROWS} rows match their staged changes, "
                                    f"through position {at(2, 3)}")
    assert f"history: {VERSIONS} versions match their staged changes" in text

    code, document = verified(warehouse)
    assert code == 0 and document["ok"] is True
    proof = document["tables"]["dbo.t"]
    assert proof["status"] == "ok" and proof["applied_through"] == at(2, 3)
    assert (proof["mirror"]["expected_rows"], proof["mirror"]["actual_rows"]) == (ROWS, ROWS)
    assert proof["history"]["actual_rows"] == VERSIONS and proof["history"]["samples"] == []


@pytest.mark.slow
def test_rows_deleted_added_and_changed_with_deltalake_are_each_reported(warehouse):
    mirror = DeltaTable(str(warehouse / "dbo" / "t"))
    mirror.delete("id = 3")
    mirror.update(predicate="id = 4", updates={"v": "'tampered'"})
    schema = pa.schema([field for field in read_table(warehouse / "dbo" / "t").schema])
    added = [{POSITION: at(9, 0), "id": 99, "v": "new", "n": 1},  # a new key at a new position
             {POSITION: at(1, 5), "id": 98, "v": "stray", "n": 2}]  # at id 6's position
    write_deltalake(str(warehouse / "dbo" / "t"), pa.Table.from_pylist(added, schema=schema),
                    mode="append")

    code, document = verified(warehouse)

    assert code == 1 and document["ok"] is False
    proof = document["tables"]["dbo.t"]
    assert proof["status"] == "differs"
    assert (proof["mirror"]["missing"], proof["mirror"]["extra"],
            proof["mirror"]["changed"]) == (1, 2, 1)
    assert differences(proof) == {
        ("missing", (("id", 3),), at(1, 2), ()),
        ("extra", (("id", 99),), at(9, 0), ()),
        ("extra", (("id", 98),), at(1, 5), ()),
        ("changed", (("id", 4),), at(1, 3), (("v", "v4", "tampered"),))}
    assert proof["history"]["samples"] == []  # the history table was not touched
    code, text = verify(warehouse, "dbo.t")
    assert code == 1 and text.startswith("dbo.t: DIFFERS: 1 missing, 2 extra, 1 changed of "
                                         f"{ROWS} expected rows ({ROWS + 1} in the table)")
    assert f"changed  id=4 at position {at(1, 3)}; v: expected 'v4', found 'tampered'" in text


@pytest.mark.slow
def test_a_value_changed_through_the_engine_is_reported(warehouse):
    spark = owner_session()
    try:
        spark.sql(f"update delta.`{warehouse / 'dbo' / 't'}` set n = -1 where id = 5").collect()
    finally:
        spark.stop()

    code, document = verified(warehouse)

    assert code == 1
    assert differences(document["tables"]["dbo.t"]) == {
        ("changed", (("id", 5),), at(1, 4), (("n", 5, -1),))}
    assert document["tables"]["dbo.c"]["status"] == "ok"
    assert verify(warehouse, "dbo.c")[0] == 0  # only the table named


@pytest.mark.slow
def test_a_tampered_history_version_is_reported(warehouse):
    DeltaTable(str(warehouse / "dbo" / "t__history")).update(
        predicate=f"_lm_valid_from = {at(2, 0)}", updates={"v": "'rewritten'"})

    code, document = verified(warehouse)

    assert code == 1
    proof = document["tables"]["dbo.t"]
    assert proof["mirror"]["samples"] == [] and proof["history"]["changed"] == 1
    assert differences(proof, "history") == {
        ("changed", (("id", 1),), at(2, 0), (("v", "u1", "rewritten"),))}
    code, text = verify(warehouse)
    assert code == 1 and "history: 0 missing, 0 extra, 1 changed" in text


@pytest.mark.slow
def test_verify_after_compaction_proves_the_mirror_and_the_versions_since(warehouse):
    for maintained in maintain(warehouse):
        assert maintained["skipped"] == [] and maintained["staged_rows_folded"] > 0

    code, document = verified(warehouse)

    assert code == 0
    proof = document["tables"]["dbo.t"]
    assert proof["compacted_through"] == at(2, 3) and proof["applied_through"] == at(2, 3)
    assert proof["mirror"]["actual_rows"] == ROWS
    assert proof["history"]["actual_rows"] == ROWS  # only the current versions are provable
    assert proof["notes"] == [
        f"history versions that ended at or before position {at(2, 3)} are not compared: "
        "staging compaction folded the changes that made them"]
    code, text = verify(warehouse)
    assert code == 0 and f"changes up to {at(2, 3)} were proved when compaction folded" in text
    code, text, proof = counted(warehouse, {"dbo.t": ROWS})
    assert code == 0 and proof["source"]["verdict"] == "ok"
    code, text, proof = counted(warehouse, {"dbo.t": {"rows": 6, "sequence": 1}})
    assert code == 1 and proof["source"]["verdict"].startswith(
        "the changes up to file 1 were folded by staging compaction")


@pytest.mark.slow
def test_compaction_keeps_the_changes_of_a_tampered_mirror_and_verify_reports_it(warehouse):
    DeltaTable(str(warehouse / "dbo" / "t")).delete("id = 6")
    staged = DeltaTable(str(warehouse / "_lakemirror/staging/dbo/t")).version()

    maintained = {table["table"]: table for table in maintain(warehouse)}["t"]

    assert maintained["staged_rows_folded"] == 0
    [failed] = maintained["failed"]
    assert "the mirror differs from its staged changes (1 missing, 0 extra, 0 changed rows)" in (
        failed)
    assert DeltaTable(str(warehouse / "_lakemirror/staging/dbo/t")).version() == staged
    code, document = verified(warehouse)
    assert code == 1
    assert differences(document["tables"]["dbo.t"]) == {("missing", (("id", 6),), at(1, 5), ())}
    assert document["tables"]["dbo.t"]["compacted_through"] == 0


def maintain(warehouse: Path) -> list[dict[str, Any]]:
    """`lakemirror maintain --json`'s tables."""
    result = CliRunner().invoke(cli, ["maintain", "--json", "--warehouse", str(warehouse)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["tables"]


def counted(warehouse: Path, counts: object) -> tuple[int, str, dict[str, Any]]:
    """`lakemirror verify --source-counts` with a count file of `counts`: its exit code,
    text, and the JSON document's table dbo.t."""
    path = warehouse.parent / "counts.json"
    path.write_text(json.dumps(counts))
    code, text = verify(warehouse, "--source-counts", str(path))
    again, document = verified(warehouse, "--source-counts", str(path))
    assert again == code
    return code, text, document["tables"]["dbo.t"]


@pytest.mark.slow
def test_source_counts_tell_the_publishers_side_from_lakemirrors(warehouse):
    code, text, proof = counted(warehouse, {"dbo.t": ROWS})
    assert code == 0 and proof["source"]["verdict"] == "ok"
    assert f"  source count {ROWS} at file 2: ok" in text

    code, text, proof = counted(warehouse, {"dbo.t": {"rows": 6, "sequence": 1}})
    assert code == 0 and proof["source"]["replayed_rows"] == 6

    code, text, proof = counted(warehouse, {"DBO.T": ROWS + 1})
    assert code == 1 and proof["status"] == "differs" and proof["mirror"]["samples"] == []
    assert proof["source"]["verdict"] == (
        f"the publisher's side: its change files up to file 2 add up to {ROWS} rows, the "
        f"source counts {ROWS + 1}")

    code, text, proof = counted(warehouse, {"dbo.t": {"rows": 1, "sequence": 3}})
    assert code == 1 and proof["source"]["verdict"].startswith("file 3 is not staged yet")

    DeltaTable(str(warehouse / "dbo" / "t")).delete("id = 7")
    code, text, proof = counted(warehouse, {"dbo.t": ROWS})
    assert code == 1 and proof["source"]["verdict"].startswith("lakemirror's side")


@pytest.mark.parametrize(("counts", "message"), [
    ({"dbo.nope": 1}, "no mirrored table dbo.nope in this warehouse"),
    ([1], "cannot be read: not a JSON object of table names"),
    ({"dbo.t": -1}, "cannot be read: -1 is not a row count"),
    ({"dbo.t": {"rows": 1, "sequence": "2"}}, "is not a row count (with a file sequence"),
    ({"dbo.t": {"count": 1}}, "is not a row count"),
    ({"dbo.t": 1, "DBO.T": 2}, "a table is named twice (names are not case-sensitive)"),
])
@pytest.mark.slow
def test_a_count_of_an_unknown_table_or_a_malformed_count_file_is_a_usage_error(
        warehouse, counts, message):
    path = warehouse.parent / "counts.json"
    path.write_text(json.dumps(counts))
    result = CliRunner().invoke(cli, ["verify", "--warehouse", str(warehouse),
                                      "--source-counts", str(path)])
    assert result.exit_code == 2 and message in result.output


@pytest.mark.slow
def test_an_unknown_table_is_a_usage_error_naming_it(warehouse):
    result = CliRunner().invoke(cli, ["verify", "--warehouse", str(warehouse), "dbo.t",
                                      "sales.orders"])
    assert result.exit_code == 2
    assert "no mirrored table sales.orders in this warehouse" in result.output
    assert "name one of: dbo.c, dbo.t" in result.output


HOSTILE_KEY = 'k`e"y \' ü'
HOSTILE = pa.schema([(HOSTILE_KEY, pa.string()), ("lm_present", pa.int64()),
                     ("Mixed Case", pa.string()), ("f", pa.float64()),
                     ("s", pa.struct([("x", pa.int64())])), (M, pa.int32())])


@pytest.mark.slow
def test_a_table_keyed_on_a_hostile_column_name_is_verified(tmp_path):
    """Names with quotes, backticks, spaces and non-ASCII letters, mixed case, and names the
    comparison's own columns could take; NaN (equal to itself here) and nested values."""
    zone, service = mirror_setup(tmp_path)
    (zone.table("T", None) / "_metadata.json").write_text(
        json.dumps({"keyColumns": [HOSTILE_KEY]}))
    rows = [{HOSTILE_KEY: key, "lm_present": i, "Mixed Case": f"m{i}",
             "f": float("nan") if i == 2 else 0.5, "s": {"x": i}, M: marker}
            for i, (key, marker) in enumerate([("a", INS), ("b", INS), ("c", INS), ("a", UPD)])]
    zone.write("T", 1, rows, HOSTILE)
    assert {s.status for s in service.run()} == {"replicating"}
    assert verify(service.settings.warehouse)[0] == 0

    mirror = DeltaTable(str(service.settings.warehouse / "dbo" / "t"))
    mirror.update(predicate="lm_present = 2", updates={"f": "1.0", '"Mixed Case"': "'zz'"})
    mirror.delete("lm_present = 1")

    code, document = verified(service.settings.warehouse)

    assert code == 1
    assert differences(document["tables"]["dbo.t"]) == {
        ("missing", ((HOSTILE_KEY, "b"),), at(1, 1), ()),
        ("changed", ((HOSTILE_KEY, "c"),), at(1, 2),
         (("Mixed Case", "m2", "zz"), ("f", "nan", 1.0)))}
    code, text = verify(service.settings.warehouse)
    assert f"""changed  {HOSTILE_KEY}='c' at position {at(1, 2)}; Mixed Case: expected 'm2', \
found 'zz'; f: expected nan, found 1.0""" in text


def test_a_folder_that_is_not_a_warehouse_is_a_usage_error_not_a_proof_of_nothing(tmp_path):
    result = CliRunner().invoke(cli, ["verify", "--warehouse", str(tmp_path / "typo")])
    assert result.exit_code == 2 and "is not a lakemirror warehouse: it does not exist" in (
        result.output)
    result = CliRunner().invoke(cli, ["verify", "--warehouse", str(tmp_path)])
    assert result.exit_code == 2 and "holds no _lakemirror/ folder" in result.output


@pytest.mark.slow
def test_a_staged_column_the_mirror_lacks_is_compared_as_null(tmp_path):
    """A column staged by a file the mirror has not applied yet is no difference (it is
    NULL in every applied change); one holding applied values is, row by row."""
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.write("T", 1, FILES[0], SCHEMA)
    nested = pa.schema([*SCHEMA.remove(3), ("s", pa.struct([("a", pa.int64())])), (M, pa.int32())])
    zone.write("T", 2, [{"id": 1, "v": "x", "n": 1, "s": {"a": 1}, M: UPD}], nested)
    assert {s.status for s in service.run()} == {"replicating"}
    zone.write("T", 3, [{"id": 2, "y": 7, M: UPS}],
               pa.schema([("id", pa.int64()), ("y", pa.int64()), (M, pa.int32())]))
    [table] = discover_tables(zone.root)
    assert ingest_table(table, Warehouse(service.settings.warehouse)).status == "replicating"
    warehouse = service.settings.warehouse

    code, text = verify(warehouse)

    assert code == 0, text
    assert "  the mirror lacks staged columns, compared as NULL: y" in text.splitlines()

    mirrored = read_table(warehouse / "dbo" / "t").drop_columns(["s"])
    write_deltalake(str(warehouse / "dbo" / "t"), mirrored, mode="overwrite",
                    schema_mode="overwrite")
    code, document = verified(warehouse)
    assert code == 1
    assert document["tables"]["dbo.t"]["missing_columns"] == ["s", "y"]
    assert document["tables"]["dbo.t"]["mirror"]["samples"] == [
        {"kind": "changed", "position": at(2, 0), "key": {"id": 1},
         "columns": {"s": {"expected": {"a": 1}, "actual": None}}}]


@pytest.mark.slow
def test_a_batch_applied_but_not_recorded_is_proved_at_its_claimed_end(warehouse):
    """A run that stopped between a MERGE and its bookkeeping left the mirror (and history)
    ahead of the applied watermark, at the batch end it claimed: not a difference."""
    DeltaTable(str(warehouse / "_lakemirror/control/mirror_batches")).delete(
        f"kind = 'applied' and relation_name like 'dbo.t%' and batch_end > {at(1, 5)}")

    code, document = verified(warehouse)

    assert code == 0, document
    proof = document["tables"]["dbo.t"]
    assert proof["applied_through"] == at(2, 3)
    assert proof["notes"] == [
        f"{relation} holds the changes up to position {at(2, 3)}, whose run stopped before "
        "recording them: the next run records them" for relation in ("dbo.t", "dbo.t__history")]
    DeltaTable(str(warehouse / "dbo" / "t")).delete("id = 7")
    code, document = verified(warehouse)
    assert code == 1 and document["tables"]["dbo.t"]["applied_through"] == at(1, 5)
