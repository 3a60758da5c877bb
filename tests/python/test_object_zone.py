"""The landing zone's door on an object store (Azurite, moto's S3) against the same zone on
disk: discovery from delimiter listings, moves as copy + delete and their recovery after a crash
at each step, staged files that change, the incarnation mark's conditional put, hostile keys.

Each test builds its zone on disk with the `Zone` helper and publishes it (`Published`): on
disk it is mirrored where it is; on a server each file is uploaded once, under a fresh prefix.
"""

from __future__ import annotations

import http.client
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import obstore
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from conftest import Zone
from zone_kinds import KINDS, Published
from lakemirror.errors import UnsafeEntryError
from lakemirror.landing import discover_tables
from lakemirror.landing.discovery import list_ahead
from lakemirror.landing.incarnation import MARKER, mark_incarnation
from lakemirror.landing.object_zone import ObjectPath, ObjectZone
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table
from lakemirror.staging.ingest import IngestResult
from lakemirror.staging.lifecycle import find_retirements
from lakemirror.staging.retention import purge_processed

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])


class Crash(BaseException):
    """A process killed at this point: nothing catches it, as nothing catches a kill."""


@pytest.fixture(params=KINDS)
def published(request: pytest.FixtureRequest, zone: Zone) -> Published:
    server = None if request.param == "local" else request.getfixturevalue(
        f"{request.param}_server")
    return Published(zone, server)


@pytest.fixture(params=["azurite", "s3"])
def on_server(request: pytest.FixtureRequest, zone: Zone) -> Published:
    return Published(zone, request.getfixturevalue(f"{request.param}_server"))


def ingest_all(published: Published, tmp_path: Path, *, retire: bool = False
               ) -> dict[str, IngestResult]:
    """Ingest every table of the zone; after the retirement check first when `retire`, as a
    run does (it reads the same tables' folders)."""
    warehouse = Warehouse(tmp_path / "warehouse")
    tables = discover_tables(published.door)
    if retire:
        assert find_retirements(tables, warehouse) == []
    return {table.qualified_name: ingest_table(table, warehouse) for table in tables}


def staged_ids(tmp_path: Path, table: str = "t") -> list[int]:
    rows = DeltaTable(str(tmp_path / "warehouse/_lakemirror/staging/dbo" / table)
                      ).to_pyarrow_table().sort_by("_lm_position").to_pylist()
    return [row["id"] for row in rows]


def write_files(published: Published, numbers: range, folder: str = "T") -> None:
    for number in numbers:
        published.zone.write(folder, number, [{"id": number, "v": "x", ROW_MARKER: 0}], SCHEMA)
    published.publish()


def test_discovers_tables_and_schema_folders_from_listings(published: Published) -> None:
    published.zone.table("Customers", ["id"])
    published.zone.table("Sales.schema/Orders", ["id"])
    published.zone.table("_Hidden", ["id"])
    published.put("_partnerEvents.json", b"{}")
    published.put("README.md", b"not a table")
    published.publish()
    found = {(table.schema, table.name, table.zone_folder)
             for table in discover_tables(published.door)}
    assert found == {("dbo", "customers", "Customers"), ("sales", "orders", "Sales.schema/Orders")}


def test_moves_all_but_the_newest_and_an_idle_run_lists_no_history(
        published: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    published.zone.table("T", ["id"])
    write_files(published, range(1, 4))
    first = ingest_all(published, tmp_path)["dbo.t"]
    assert (first.status, first.staged_files) == ("replicating", 3), first.error
    assert published.names("T") == ["00000000000000000003.parquet", MARKER, "_metadata.json"]
    assert published.names("T/_ProcessedFiles") == [
        "00000000000000000001.parquet", "00000000000000000002.parquet"]
    listed: list[str] = []
    entries = type(published.door).entries

    def spy(door: Any, folder: Any) -> Any:
        listed.append(folder.name)
        return entries(door, folder)

    monkeypatch.setattr(type(published.door), "entries", spy)
    again = ingest_all(published, tmp_path)["dbo.t"]
    assert (again.status, again.staged_rows, again.last_sequence) == ("replicating", 0, 3)
    assert ("_ProcessedFiles" in listed) == published.door.lists_history_cheaply
    assert staged_ids(tmp_path) == [1, 2, 3]


def mirror_tables(published: Published, tmp_path: Path, folders: tuple[str, ...],
                  numbers: range) -> None:
    """Publish the change files `numbers` in each table folder and stage them all."""
    for folder in folders:
        published.zone.table(folder, ["id"])
        write_files(published, numbers, folder)
    assert {result.status for result in ingest_all(published, tmp_path).values()} == {
        "replicating"}


def counted_requests(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count each obstore call the zone's door makes from now on, by name."""
    counts: dict[str, int] = {}
    for name in ("list_with_delimiter", "list", "get", "head", "put", "copy", "delete",
                 "open_reader"):
        def counting(*args: Any, _real: Any = getattr(obstore, name), _name: str = name,
                     **kwargs: Any) -> Any:
            counts[_name] = counts.get(_name, 0) + 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(obstore, name, counting)
    return counts


def test_an_idle_run_lists_each_table_once_and_reads_changed_control_files(
        on_server: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror_tables(on_server, tmp_path, ("T", "U"), range(1, 3))
    counts = counted_requests(monkeypatch)
    idle = ingest_all(on_server, tmp_path, retire=True)
    # the zone's top level, then each table once: the retirement check reads the marks the
    # ingest then reads, from the same listing and the copies the staging commits keep
    assert counts == {"list_with_delimiter": 3}
    assert [idle[name].staged_rows for name in ("dbo.t", "dbo.u")] == [0, 0]
    on_server.put("T/_metadata.json", b'{"keyColumns": ["v"]}')
    counts.clear()
    changed = ingest_all(on_server, tmp_path, retire=True)
    assert counts == {"list_with_delimiter": 3, "get": 1}
    assert "keyColumns changed" in (changed["dbo.t"].error or "")
    on_server.put(f"U/{MARKER}", b'{"incarnation": "another folder"}')
    counts.clear()
    changed = ingest_all(on_server, tmp_path)
    assert counts == {"list_with_delimiter": 3, "get": 2}
    assert "keyColumns changed" in (changed["dbo.t"].error or "")
    assert "deleted and created again" in (changed["dbo.u"].error or "")


def test_folders_listed_ahead_are_not_listed_again_and_a_failed_listing_is_its_tables(
        on_server: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run lists its tables' folders several at once; each ingest takes its listing, and
    a folder whose listing failed then is listed by its own ingest."""
    mirror_tables(on_server, tmp_path, ("T", "U", "V"), range(1, 3))
    write_files(on_server, range(3, 4), "U")
    tables = discover_tables(on_server.door)
    entries = type(on_server.door).entries
    failed = []

    def failing_once(door: Any, folder: Any) -> Any:
        if folder.name == "U" and not failed:
            failed.append(folder.name)
            raise OSError("connection reset")
        return entries(door, folder)

    monkeypatch.setattr(type(on_server.door), "entries", failing_once)
    counts = counted_requests(monkeypatch)
    list_ahead(tables)
    assert (failed, counts) == (["U"], {"list_with_delimiter": 2})
    counts.clear()
    warehouse = Warehouse(tmp_path / "warehouse")
    by_name = {table.name: table for table in tables}
    idle = [ingest_table(by_name[name], warehouse) for name in ("t", "v")]
    assert "list_with_delimiter" not in counts  # they took the listings made ahead
    assert [(result.status, result.last_sequence) for result in idle] == [("replicating", 2)] * 2
    retried = ingest_table(by_name["u"], warehouse)
    assert counts["list_with_delimiter"] >= 1  # U's ingest listed its folder
    assert (retried.status, retried.staged_files, retried.last_sequence) == ("replicating", 1, 3)


def test_the_retirement_check_of_a_scope_lists_only_its_folders(
        on_server: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror_tables(on_server, tmp_path, ("T", "U"), range(1, 2))
    tables = discover_tables(on_server.door)
    counts = counted_requests(monkeypatch)
    assert find_retirements(tables, Warehouse(tmp_path / "warehouse"), scope={"dbo.u"}) == []
    assert counts == {"list_with_delimiter": 1}  # U's folder, for its mark


def test_files_in_flight_wait_and_upload_names_are_ignored(
        published: Published, tmp_path: Path) -> None:
    published.zone.table("T", ["id"])
    write_files(published, range(1, 2))
    published.put("T/_scratchPad/00000000000000000002.parquet", b"partial")
    published.put("T/_00000000000000000002.parquet", b"partial")
    published.put("T/.00000000000000000002.parquet", b"partial")
    published.put("T/00000000000000000002.parquet", b"")
    result = ingest_all(published, tmp_path)["dbo.t"]
    assert (result.status, result.last_sequence) == ("waiting", 1)
    assert "is empty (0 bytes)" in (result.error or "")


FAULTS = ["before the move", "after the copy", "after the move"]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_crash_at_each_step_of_a_move_stages_every_file_once(
        published: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fault: str) -> None:
    """Kill points in the first move of a run (file 1's, once file 2 is staged): before it;
    on an object store between its copy and its delete (on disk the rename is one step);
    after it. The next run stages file 3 and no file twice, and moves what is left."""
    published.zone.table("T", ["id"])
    write_files(published, range(1, 4))
    door_class = type(published.door)
    move = door_class.move

    def crashing(door: Any, path: Any, folder: Any) -> Any:
        if fault == "before the move":
            raise Crash()
        if fault == "after the copy" and isinstance(door, ObjectZone):
            monkeypatch.setattr(obstore, "delete", lambda *args: (_ for _ in ()).throw(Crash()))
        move(door, path, folder)
        raise Crash()

    monkeypatch.setattr(door_class, "move", crashing)
    with pytest.raises(Crash):
        ingest_all(published, tmp_path)
    monkeypatch.undo()
    assert staged_ids(tmp_path) == [1, 2]
    if fault == "after the copy" and published.server is not None:
        assert "00000000000000000001.parquet" in published.names("T")
        assert "00000000000000000001.parquet" in published.names("T/_ProcessedFiles")
    result = ingest_all(published, tmp_path)["dbo.t"]
    assert (result.status, result.last_sequence) == ("replicating", 3)
    ingest_all(published, tmp_path)  # moves file 2, the newest before file 3 was staged
    assert staged_ids(tmp_path) == [1, 2, 3]
    assert [name for name in published.names("T") if name.endswith(".parquet")] == [
        "00000000000000000003.parquet"]
    assert published.names("T/_ProcessedFiles") == [
        "00000000000000000001.parquet", "00000000000000000002.parquet"]


@pytest.mark.parametrize("which", ["newest", "older"])
def test_a_staged_file_that_changes_fails_its_table(
        on_server: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        which: str) -> None:
    on_server.zone.table("T", ["id"])
    on_server.zone.table("U", ["id"])
    write_files(on_server, range(1, 3))
    write_files(on_server, range(1, 2), folder="U")
    if which == "older":  # file 1 staged, then the run was killed before its move
        monkeypatch.setattr(ObjectZone, "move", lambda *args: (_ for _ in ()).throw(Crash()))
        with pytest.raises(Crash):
            ingest_all(on_server, tmp_path)
        monkeypatch.undo()
    else:
        ingest_all(on_server, tmp_path)
    changed = "00000000000000000001.parquet" if which == "older" else \
        "00000000000000000002.parquet"
    on_server.zone.write("T", int(changed[:20]), [{"id": 99, "v": "new", ROW_MARKER: 0}],
                         SCHEMA)
    on_server.put(f"T/{changed}", (on_server.zone.root / "T" / changed).read_bytes())
    results = ingest_all(on_server, tmp_path)
    failed = results["dbo.t"]
    assert failed.status == "failed" and failed.error_type == "ChangedFileError"
    assert f"{changed} changed after it was staged" in (failed.error or "")
    assert on_server.server.url(on_server.prefix) in (failed.error or "")
    assert changed in on_server.names("T")
    assert 99 not in staged_ids(tmp_path)
    assert results["dbo.u"].status == "replicating"


def test_the_mark_is_created_once_by_two_runners(published: Published) -> None:
    published.zone.table("T", ["id"])
    published.publish()
    (table,) = discover_tables(published.door)
    assert mark_incarnation(table, "first") == "first"
    assert mark_incarnation(table, "second") == "first"
    door = published.door
    assert door.create_control(door.root / "T" / MARKER, b"{}") is None
    assert b'"first"' in (door.read_control(door.root / "T" / MARKER) or b"")


def test_object_paths_show_their_url_and_refuse_local_use(on_server: Published) -> None:
    door = on_server.door
    path = door.root / "T" / "00000000000000000001.parquet"
    url = on_server.server.url(on_server.prefix)
    assert isinstance(path, ObjectPath)
    assert str(path) == f"{url}/T/00000000000000000001.parquet"
    assert str(path.relative_to(door.root)) == "T/00000000000000000001.parquet"
    with pytest.raises(TypeError, match="not a local file"):
        os.path.exists(path)
    with pytest.raises(UnsafeEntryError, match="outside its own"):
        door.delete(door.root / "T" / ".." / ".." / "other")
    other = ObjectZone(on_server.store, "", "s3://elsewhere/zone")
    with pytest.raises(UnsafeEntryError, match="outside the landing zone"):
        door.delete(other.root / "T" / "x")


def raw_put(server: Any, key: str, data: bytes) -> None:
    """PUT an object under any key, `..` included (moto's S3 takes unsigned requests)."""
    endpoint = urlsplit(server.endpoint)
    connection = http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=30)
    connection.request("PUT", f"/lakemirror/{key}", body=data)
    assert connection.getresponse().status == 200
    connection.close()


HOSTILE: dict[str, Callable[[Published], None]] = {
    "dot-dot": lambda p: raw_put(p.server, f"{p.prefix}/Bad/../x.parquet", b"x"),
    "object and folder": lambda p: p.put("Bad/_metadata.json/x", b"{}"),
    "change file and folder": lambda p: p.put("Bad/00000000000000000001.parquet/x", b"x"),
    "percent-encoded slash": lambda p: p.put("Bad/00000000000000000001%2F.parquet", b"x"),
    "backslash": lambda p: p.put("Bad/..\\00000000000000000001.parquet", b"x"),
    "name over 1024 bytes": lambda p: p.put("Bad/" + "a" * 1100, b"x"),
    # S3 keys are UTF-8: moto stores undecodable bytes as U+FFFD, a name like any other
    "bytes that are not UTF-8": lambda p: raw_put(p.server, f"{p.prefix}/Bad/%FF%FE.parquet",
                                                   b"x"),
    "fullwidth digits": lambda p: p.put("Bad/" + "\uff10" * 19 + "\uff12.parquet", b"x"),
}


EXPECTED = {  # status, and what its error says (names that are no change file's are ignored,
    # as on disk)
    "dot-dot": ("failed", "not a valid path"),
    "object and folder": ("failed", "both an object and a folder"),
    "change file and folder": ("failed", "both an object and a folder"),
    "percent-encoded slash": ("replicating", ""),
    "backslash": ("replicating", ""),
    "name over 1024 bytes": ("replicating", ""),
    "bytes that are not UTF-8": ("replicating", ""),
    "fullwidth digits": ("failed", "has digits other than 0-9"),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_hostile_keys_fail_their_table_only(s3_server: Any, zone: Zone, tmp_path: Path,
                                            hostile: str) -> None:
    published = Published(zone, s3_server)
    published.zone.table("Bad", ["id"])
    published.zone.table("Good", ["id"])
    write_files(published, range(1, 2), folder="Good")
    write_files(published, range(1, 2), folder="Bad")
    HOSTILE[hostile](published)
    neighbour = s3_server.store(f"{published.prefix}-outside")  # a look-alike prefix
    obstore.put(neighbour, "Bad/00000000000000000001.parquet", b"not the zone's")
    results = ingest_all(published, tmp_path)
    assert results["dbo.good"].status == "replicating"
    bad = results["dbo.bad"]
    assert bad.status == EXPECTED[hostile][0], bad.error
    assert EXPECTED[hostile][1] in (bad.error or "")
    assert [meta["path"] for batch in obstore.list(neighbour) for meta in batch] == [
        "Bad/00000000000000000001.parquet"]


def test_retention_purges_processed_files_under_the_prefix_only(
        published: Published, tmp_path: Path) -> None:
    published.zone.table("T", ["id"])
    write_files(published, range(1, 4))
    if published.server is not None:  # a look-alike prefix beside the zone's
        neighbour = published.server.store(f"{published.prefix}-outside")
        obstore.put(neighbour, "T/_ProcessedFiles/00000000000000000001.parquet", b"not ours")
    ingest_all(published, tmp_path)
    (table,) = discover_tables(published.door)
    assert purge_processed(table, 1.0) == []  # moved just now: kept
    purged = purge_processed(table, 1.0, now=time.time() + 2 * 86_400)
    assert sorted(path.name for path in purged) == [
        "00000000000000000001.parquet", "00000000000000000002.parquet"]
    assert published.names("T/_ProcessedFiles") == []
    assert "00000000000000000003.parquet" in published.names("T")
    if published.server is not None:
        assert [meta["path"] for batch in obstore.list(neighbour) for meta in batch] == [
            "T/_ProcessedFiles/00000000000000000001.parquet"]


def test_look_alike_undecodable_and_overlong_table_names_fail_their_table_only(
        s3_server: Any, zone: Zone, tmp_path: Path) -> None:
    published = Published(zone, s3_server)
    for folder in ("Customers", "\u0421ustomers"):  # the second begins with a Cyrillic С
        published.zone.table(folder, ["id"])
        write_files(published, range(1, 2), folder=folder)
    raw_put(s3_server, f"{published.prefix}/Bytes%FF/00000000000000000001.parquet", b"x")
    published.put("L" * 1100 + "/00000000000000000001.parquet", b"x")
    results = ingest_all(published, tmp_path)
    assert {name: (result.status, result.error_type) for name, result in results.items()} == {
        "dbo.customers": ("replicating", None),
        "dbo.\u0441ustomers": ("failed", "FileNameError"),
        "dbo.bytes\ufffd": ("failed", "FileNameError"),
        "dbo." + "l" * 1100: ("failed", "FileNameError")}
    assert "characters other than letters" in (results["dbo.\u0441ustomers"].error or "")
    assert "1100 characters long" in (results["dbo." + "l" * 1100].error or "")
    staged = tmp_path / "warehouse/_lakemirror/staging/dbo"
    assert sorted(path.name for path in staged.iterdir()) == ["customers"]
