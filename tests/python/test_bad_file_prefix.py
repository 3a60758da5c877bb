"""A bad file stops its table at that file: every file before it is mirrored (staged on the run
that finds the bad file or an earlier one), the status says `failed` with the bad file and the
last file applied, and replacing the bad file lets the table resume exactly where it stopped."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from lakemirror.cli.main import cli
from lakemirror.codegen import MIRROR_FOLDER
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService
from conftest import Zone, as_multiset, mirror_setup, mirrored_rows

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
FILES = [  # inserts, so that a file applied twice would show as duplicate rows
    [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}],
    [{"id": 1, "v": "a2", M: 1}, {"id": 2, "v": None, M: 2}, {"id": 3, "v": "c", M: 4}],
    [{"id": 4, "v": "d", M: 0}, {"id": 3, "v": "c3", M: 1}],
    [{"id": 5, "v": "e", M: 0}, {"id": 4, "v": None, M: 2}],
]


def bad_marker(zone: Zone, sequence: int) -> None:
    zone.write("T", sequence, [{"id": 9, "v": "x", M: 3}], SCHEMA)


def type_change(zone: Zone, sequence: int) -> None:
    zone.write("T", sequence, [{"id": "9", "v": "x", M: 0}],
               pa.schema([("id", pa.string()), ("v", pa.string()), (M, pa.int32())]))


def truncated(zone: Zone, sequence: int) -> None:  # settled: the tests' window is 0 s
    path = zone.write("T", sequence, FILES[sequence - 1], SCHEMA)
    path.write_bytes(path.read_bytes()[:-20])


BAD: dict[str, tuple[Callable[[Zone, int], None], str]] = {
    "RowMarkerError": (bad_marker, "__rowMarker__=3"),
    "SchemaChangeError": (type_change, "changed type from long to string"),
    "UnreadableFileError": (truncated, "not a readable Parquet file"),
}


def lakemirror(service: MirrorService, command: str, *args: str) -> Result:
    """`lakemirror COMMAND --json` on the service's landing zone, warehouse and project."""
    return CliRunner().invoke(cli, [
        command, "--json", *args, "--landing-zone", str(service.settings.landing_zone),
        "--warehouse", str(service.settings.warehouse),
        "--project-dir", str(service.settings.project_dir)])


def only_table(result: Result) -> dict[str, Any]:
    [table] = json.loads(result.stdout)["tables"]
    return table  # type: ignore[no-any-return]


def recorded(service: MirrorService) -> dict[str, Any]:
    """The table's record in `lakemirror status --json`."""
    return only_table(CliRunner().invoke(cli, ["status", "--json",
                                               "--warehouse", str(service.settings.warehouse)]))


def expected(files: list[list[dict[str, Any]]]) -> object:
    return as_multiset(apply_changes(files, ["id"]))


@pytest.mark.parametrize("kind, mirrored_before", [
    ("RowMarkerError", 0), ("SchemaChangeError", 0), ("UnreadableFileError", 0),
    ("RowMarkerError", 1)])
def test_a_bad_file_stops_its_table_at_that_file_and_it_resumes_once_fixed(
        tmp_path: Path, kind: str, mirrored_before: int) -> None:
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    for sequence in range(1, mirrored_before + 1):  # mirrored by an earlier run
        zone.write("T", sequence, FILES[sequence - 1], SCHEMA)
        assert lakemirror(service, "run").exit_code == 0
    bad = mirrored_before + 2  # this run finds one good file, the bad one, one more good one
    zone.write("T", bad - 1, FILES[bad - 2], SCHEMA)
    write_bad, message = BAD[kind]
    write_bad(zone, bad)
    zone.write("T", bad + 1, FILES[bad], SCHEMA)
    bad_path = zone.root / "T" / f"{bad:020d}.parquet"

    result = lakemirror(service, "run")

    assert result.exit_code == 1, result.output
    table = only_table(result)
    assert (table["status"], table["error_class"]) == ("failed", "user")
    assert message in table["error"] and str(bad_path) in table["error"]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FILES[:bad - 1])
    assert (table["last_sequence"], table["rows"]) == (bad - 1, len(apply_changes(
        FILES[:bad - 1], ["id"])))
    monitor = recorded(service)
    assert (monitor["status"], monitor["error"]) == ("failed", table["error"])
    assert (monitor["last_sequence_applied"], monitor["rows"]) == (bad - 1, table["rows"])
    assert monitor["last_sync"] is not None

    bad_path.unlink()  # the publisher replaces it with the good file, under the same name
    zone.write("T", bad, FILES[bad - 1], SCHEMA)
    result = lakemirror(service, "run")
    assert result.exit_code == 0, result.output
    assert (only_table(result)["status"], only_table(result)["last_sequence"]) == (
        "replicating", bad + 1)
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FILES[:bad + 1])
    assert recorded(service)["last_sequence_applied"] == bad + 1


def test_changed_keys_fail_the_table_and_its_staged_files_are_mirrored_with_the_accepted_keys(
        tmp_path: Path) -> None:
    zone, service = mirror_setup(tmp_path)
    folder = zone.table("T", ["id"])
    zone.write("T", 1, FILES[0], SCHEMA)
    zone.write("T", 2, FILES[1], SCHEMA)
    assert lakemirror(service, "ingest").exit_code == 0  # staged, not applied
    # a fresh checkout of the dbt project, whose generated models are not kept in it
    shutil.rmtree(service.settings.project_dir / MIRROR_FOLDER)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["v"]}))

    result = lakemirror(service, "run")

    assert result.exit_code == 1, result.output
    table = only_table(result)
    assert (table["status"], table["error_class"], table["last_sequence"]) == (
        "failed", "user", 2)
    assert "keyColumns changed from ['id'] to ['v']" in table["error"]
    assert str(folder / "_metadata.json") in table["error"]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FILES[:2])  # keys: id
    assert (recorded(service)["status"], recorded(service)["last_sequence_applied"]) == (
        "failed", 2)

    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    zone.write("T", 3, FILES[2], SCHEMA)
    result = lakemirror(service, "run")
    assert (result.exit_code, only_table(result)["status"]) == (0, "replicating")
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FILES[:3])
