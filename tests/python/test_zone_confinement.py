"""Confinement: nothing outside the landing zone is ever read, written, moved or deleted, not
through symbolic links, `..` or special files; a hostile entry fails only its table, with a
clear error, and never makes lakemirror drop a table, hang, or lose data.

Every case builds a zone with a healthy table next to the hostile entry and a folder outside
the zone that a followed link would reach, ingests (with retention 0, so that a followed link
would be purged), and checks the bad table's exact status and error, the healthy table's
staged rows, that the outside folder is unchanged byte for byte and to the nanosecond, and
that nothing is retired."""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import pwd
import shutil
import socket
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from lakemirror.errors import UnsafeEntryError
from lakemirror.landing import discover_tables, sequence_file_name
from lakemirror.landing import zone as zone_module
from lakemirror.landing.incarnation import MARKER, read_incarnation
from lakemirror.reference import ROW_MARKER
from lakemirror.environment import DEFAULT_MAX_TEXT_BYTES
from lakemirror.staging import IngestResult, StagingTable, Warehouse, ingest_table
from lakemirror.staging import ingest as ingest_module
from lakemirror.staging.lifecycle import find_retirements

from conftest import fail_if_hung

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
FIRST = [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}]
SECOND = [{"id": 3, "v": "c", M: 0}]
FILE_1, FILE_2 = sequence_file_name(1), sequence_file_name(2)
LONG_AGO = 1_000_000_000  # 2001: older than any retention
LINK_FIX = "replace the link with the real file or folder"


def write_table(folder: Path, *files: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    for sequence, rows in enumerate(files, 1):
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA),
                       folder / sequence_file_name(sequence))
    return folder


def checksums(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Kind, content hash and modification time of every entry under `folder`."""
    sums = {}
    for path in sorted(folder.rglob("*")):
        status = path.lstat()
        content = (hashlib.sha256(path.read_bytes()).hexdigest()
                   if path.is_file() and not path.is_symlink() else "")
        sums[str(path.relative_to(folder))] = (content, status.st_mode, status.st_mtime_ns)
    return sums


@dataclass
class World:
    """A zone with tables `Good` and `Bad` (one file each, staged once), a warehouse, and a
    folder outside the zone that holds a table's worth of files, all long expired."""

    zone: Path
    outside: Path
    warehouse: Warehouse

    def __post_init__(self) -> None:
        write_table(self.outside / "folder", FIRST)
        write_table(self.outside / "folder" / "T", FIRST)
        (self.outside / "folder" / "data.parquet").write_bytes(
            (self.outside / "folder" / FILE_1).read_bytes())
        for path in self.outside.rglob("*"):
            os.utime(path, (LONG_AGO, LONG_AGO))
        self.before = checksums(self.outside)
        write_table(self.zone / "Good", FIRST)
        write_table(self.zone / "Bad", FIRST)
        assert {name: result.status for name, result in self.ingest().items()} == {
            "dbo.good": "replicating", "dbo.bad": "replicating"}

    @property
    def bad(self) -> Path:
        return self.zone / "Bad"

    def ingest(self, max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> dict[str, IngestResult]:
        """Ingest every table; a name given twice (colliding folders) keeps the last result,
        after checking that both results are the same failure."""
        results: dict[str, IngestResult] = {}
        for table in discover_tables(self.zone):
            result = ingest_table(table, self.warehouse, retention_days=0,
                                  max_text_bytes=max_text_bytes)
            earlier = results.setdefault(table.qualified_name, result)
            assert (earlier.status, earlier.error_type) == (result.status, result.error_type)
        return results

    def staged(self, table: str) -> list[dict[str, Any]]:
        path = self.warehouse.staging_path("dbo", table)
        rows = DeltaTable(str(path)).to_pyarrow_table().sort_by("_lm_position")
        return rows.select(["id", "v", M]).to_pylist()

    def check_contained(self, results: dict[str, IngestResult]) -> None:
        """The healthy table staged exactly, nothing outside changed, nothing is retired."""
        assert results["dbo.good"].status == "replicating", results["dbo.good"].error
        assert self.staged("good") == FIRST
        assert checksums(self.outside) == self.before
        assert find_retirements(discover_tables(self.zone), self.warehouse) == []


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "LandingZone", tmp_path / "outside",
                 Warehouse(tmp_path / "warehouse"))


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A blocking open of a FIFO would hang forever: fail the test instead."""
    with fail_if_hung(60, "lakemirror blocked on a landing-zone entry"):
        yield


def fifo(path: Path) -> None:
    os.mkfifo(path)


def unix_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


def replaced(name: str, make: Callable[[Path], None]) -> Callable[[World], None]:
    """Bad's entry `name` (its metadata, its mark, a new change file) made by `make`."""
    def build(world: World) -> None:
        path = world.bad / name
        if path.exists():
            path.unlink()
        make(path)
    return build


def linked(name: str, target: str) -> Callable[[World], None]:
    return replaced(name, lambda path: path.symlink_to(Path("..") / ".." / "outside" / target))


def zone_link(name: str) -> Callable[[World], None]:
    return lambda world: (world.zone / name).symlink_to(world.outside / "folder")


def processed_link(name: str) -> Callable[[World], None]:
    """Bad's `name` folder links outside, and a second file makes the first one move."""
    def build(world: World) -> None:
        (world.bad / name).symlink_to(world.outside / "folder", target_is_directory=True)
        write_table(world.bad, FIRST, SECOND)
    return build


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[World], None]
    table: str
    error_type: str
    message: str
    hint: str = ""
    staged: tuple[dict[str, Any], ...] = (*FIRST,)  # Bad's staged rows afterwards


CASES = [
    Case("symlinked table folder", zone_link("Linked"), "dbo.linked", "UnsafeEntryError",
         "Linked is a symbolic link, not a folder", LINK_FIX),
    Case("symlinked schema folder", zone_link("Linked.schema"), "linked.*", "UnsafeEntryError",
         "Linked.schema is a symbolic link, not a folder", LINK_FIX),
    Case("symlinked change file", linked(FILE_2, "folder/data.parquet"), "dbo.bad",
         "UnsafeEntryError", f"{FILE_2} is a symbolic link, not a regular file", LINK_FIX),
    Case("symlinked _metadata.json", linked("_metadata.json", "folder/_metadata.json"),
         "dbo.bad", "UnsafeEntryError", "_metadata.json is a symbolic link, not a regular file",
         LINK_FIX),
    Case("_ProcessedFiles links outside", processed_link("_ProcessedFiles"), "dbo.bad",
         "UnsafeEntryError", "_ProcessedFiles is a symbolic link, not a folder", LINK_FIX,
         (*FIRST, *SECOND)),
    Case("_FilesReadyToDelete links outside", processed_link("_FilesReadyToDelete"), "dbo.bad",
         "UnsafeEntryError", "_FilesReadyToDelete is a symbolic link, not a folder", LINK_FIX,
         (*FIRST, *SECOND)),
    Case("FIFO _metadata.json", replaced("_metadata.json", fifo), "dbo.bad",
         "UnsafeEntryError", "_metadata.json is a FIFO, not a regular file"),
    Case("FIFO _lakemirror.json", replaced(MARKER, fifo), "dbo.bad", "UnsafeEntryError",
         f"{MARKER} is a FIFO, not a regular file"),
    Case("FIFO change file", replaced(FILE_2, fifo), "dbo.bad", "UnsafeEntryError",
         f"{FILE_2} is a FIFO, not a regular file"),
    Case("socket change file", replaced(FILE_2, unix_socket), "dbo.bad", "UnsafeEntryError",
         f"{FILE_2} is a socket, not a regular file"),
    Case("directory named as a change file", replaced(FILE_2, Path.mkdir), "dbo.bad",
         "UnsafeEntryError", f"{FILE_2} is a directory, not a regular file"),
    Case("_metadata.json is a directory", replaced("_metadata.json", Path.mkdir), "dbo.bad",
         "UnsafeEntryError", "_metadata.json is a directory, not a regular file"),
    Case("_metadata.json of 2 MB", replaced("_metadata.json", lambda path: path.write_text(
        json.dumps({"keyColumns": ["id"], "pad": "x" * 2_000_000}))), "dbo.bad",
         "UnsafeEntryError", "_metadata.json is larger than 1048576 bytes"),
    Case("folder name with a trailing newline", lambda world: write_table(world.zone / "Odd\n"),
         "dbo.odd\n", "FileNameError",
         "table name 'Odd\\n' has characters other than letters, digits and _"),
    Case("240-character folder name", lambda world: write_table(world.zone / ("L" * 240), FIRST),
         "dbo." + "l" * 240, "FileNameError", "is 240 characters long"),
    Case("garbled _lakemirror.json", replaced(MARKER, lambda path: path.write_text("{nope")),
         "dbo.bad", "MetadataError", f"{MARKER} is not lakemirror's incarnation mark"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_entry_fails_its_table_alone_and_nothing_outside_changes(world, case):
    case.make(world)
    results = world.ingest()
    failed = results[case.table]
    assert (failed.status, failed.error_type, failed.error_class) == (
        "failed", case.error_type, "user"), failed.error
    assert failed.error and case.message in failed.error and "Fix:" in failed.error
    assert f"[table {case.table}" in failed.error and case.hint in failed.error
    world.check_contained(results)
    assert world.staged("bad") == list(case.staged)  # nothing lost, nothing from outside
    again = world.ingest()[case.table]
    assert (again.status, again.error) == (failed.status, failed.error)  # stable, no loop
    assert checksums(world.outside) == world.before


def test_folders_that_map_to_one_table_or_model_all_fail(world):
    write_table(world.zone / "Orders", FIRST)
    write_table(world.zone / "orders", FIRST)
    write_table(world.zone / "x__y", FIRST)
    write_table(world.zone / "dbo__x.schema" / "y", FIRST)
    tables = discover_tables(world.zone)
    assert sorted(table.qualified_name for table in tables if table.problem) == [
        "dbo.orders", "dbo.orders", "dbo.x__y", "dbo__x.y"]
    results = world.ingest()
    for name, folders in (("dbo.orders", "'Orders' and 'orders'"),
                          ("dbo.x__y", "'x__y' and 'dbo__x.schema/y'"),
                          ("dbo__x.y", "'dbo__x.schema/y' and 'x__y'")):
        assert (results[name].status, results[name].error_type) == ("failed", "FileNameError")
        assert f"the folders {folders} map to the same" in results[name].error
    assert "model dbo__x__y" in results["dbo.x__y"].error
    assert "table dbo.orders (names are case-insensitive)" in results["dbo.orders"].error
    world.check_contained(results)
    assert not world.warehouse.staging_path("dbo", "orders").exists()


def test_collision_with_a_mirrored_table_keeps_it_until_one_folder_goes(world):
    write_table(world.zone / "bad", FIRST)  # next to Bad, which is staged
    results = world.ingest()
    assert results["dbo.bad"].error_type == "FileNameError"
    world.check_contained(results)
    assert world.staged("bad") == FIRST
    shutil.rmtree(world.zone / "bad")
    assert world.ingest()["dbo.bad"].status == "replicating"


def test_hidden_and_underscore_folders_at_the_root_are_not_tables(world):
    write_table(world.zone / ".state", FIRST)
    write_table(world.zone / "_staging", FIRST)
    (world.zone / "README.md").write_text("not a table")
    results = world.ingest()
    assert sorted(results) == ["dbo.bad", "dbo.good"]
    world.check_contained(results)


def test_discovery_marks_links_and_special_entries_where_tables_would_be(world):
    (world.zone / "Linked").symlink_to(world.outside / "folder")
    (world.zone / "Linked.schema").symlink_to(world.outside)
    os.mkfifo(world.zone / "Fifo")
    (world.zone / "Sales.schema").mkdir()
    (world.zone / "Sales.schema" / "Inner").symlink_to(world.outside / "folder")
    (world.zone / "notes.txt").symlink_to(world.outside / "folder" / "data.parquet")
    problems = {table.qualified_name: (type(table.problem).__name__, str(table.problem))
                for table in discover_tables(world.zone) if table.problem}
    assert {name: kind for name, (kind, _) in problems.items()} == {
        "dbo.linked": "UnsafeEntryError", "linked.*": "UnsafeEntryError",
        "dbo.fifo": "UnsafeEntryError", "sales.inner": "UnsafeEntryError",
        "dbo.notes.txt": "UnsafeEntryError"}
    assert "Fifo is a FIFO, not a folder" in problems["dbo.fifo"][1]
    assert "Inner is a symbolic link, not a folder" in problems["sales.inner"][1]
    assert checksums(world.outside) == world.before


def test_a_staged_schema_folder_replaced_by_a_link_is_kept(world):
    write_table(world.zone / "Sales.schema" / "Orders", FIRST)
    assert world.ingest()["sales.orders"].status == "replicating"
    shutil.rmtree(world.zone / "Sales.schema")
    (world.zone / "Sales.schema").symlink_to(world.outside)  # `folder` would be a table
    results = world.ingest()
    assert (results["sales.*"].status, results["sales.*"].error_type) == (
        "failed", "UnsafeEntryError")
    world.check_contained(results)  # sales.orders is not retired


def test_the_door_never_follows_a_link(world):
    linked = world.zone / "Linked"
    linked.symlink_to(world.outside / "folder")
    door = zone_module.LandingZone(world.zone)
    attempts: list[Callable[[], object]] = [
        lambda: door.entries(linked), lambda: door.entry(linked / FILE_1),
        lambda: door.open(linked / FILE_1), lambda: door.read_control(linked / "_metadata.json"),
        lambda: door.write_control(linked / MARKER, b"{}"),
        lambda: door.make_folder(linked / "_ProcessedFiles"),
        lambda: door.move(world.bad / FILE_1, linked), lambda: door.delete(linked / FILE_1)]
    for attempt in attempts:
        with pytest.raises(UnsafeEntryError, match="Linked is a symbolic link, not a folder"):
            attempt()
    assert checksums(world.outside) == world.before
    assert (world.bad / FILE_1).exists()


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_the_mark_is_never_written_through_a_leftover_partial_file(world, link):
    fresh = write_table(world.zone / "Fresh", FIRST)
    partial, target = fresh / f"{MARKER}.partial", world.outside / "folder" / "data.parquet"
    if link == "symbolic":
        partial.symlink_to(target)
    else:
        os.link(target, partial)
    results = world.ingest()
    if link == "symbolic":
        assert results["dbo.fresh"].error_type == "UnsafeEntryError"
        assert f"{MARKER}.partial is a symbolic link, not a regular file" in \
            results["dbo.fresh"].error
    else:  # a hard link is a file of the zone: unlinked, never written through
        assert results["dbo.fresh"].status == "replicating", results["dbo.fresh"].error
        assert read_incarnation(fresh) is not None and not partial.exists()
    world.check_contained(results)


def test_a_hard_linked_file_is_moved_and_purged_by_its_zone_name_only(world):
    (world.bad / FILE_1).unlink()
    os.link(world.outside / "folder" / FILE_1, world.bad / FILE_1)  # the same rows
    pq.write_table(pa.Table.from_pylist(SECOND, schema=SCHEMA), world.bad / FILE_2)
    world.ingest()
    results = world.ingest()  # moves file 1 into _ProcessedFiles/, then purges it
    assert results["dbo.bad"].status == "replicating", results["dbo.bad"].error
    assert not (world.bad / FILE_1).exists() and world.staged("bad") == FIRST + SECOND
    world.check_contained(results)  # the outside name keeps its content and time


def test_a_path_outside_the_zone_is_refused_by_the_door(world):
    door = zone_module.LandingZone(world.zone)
    for path in (world.outside / "folder" / FILE_1, world.zone / ".." / "outside" / "folder"):
        with pytest.raises(UnsafeEntryError, match="outside the landing zone"):
            door.open(path)
        with pytest.raises(UnsafeEntryError, match="outside the landing zone"):
            door.delete(path)
    assert checksums(world.outside) == world.before


def deny_folder(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Opening the folder `name` fails with EACCES, as for a folder of mode 000 (the tests
    run as root, whom modes do not stop)."""
    real_open = os.open

    def guarded(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == name and flags & os.O_DIRECTORY:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)
    monkeypatch.setattr(zone_module.os, "open", guarded)


def test_unreadable_table_folder_fails_without_a_drop_and_recovers(world, monkeypatch):
    with monkeypatch.context() as patch:
        deny_folder(patch, "Bad")
        assert find_retirements(discover_tables(world.zone), world.warehouse) == []
        results = world.ingest()
    failed = results["dbo.bad"]
    assert (failed.status, failed.error_type, failed.error_class) == (
        "failed", "ZoneAccessError", "user")
    assert f"permission denied on {world.bad}" in failed.error
    world.check_contained(results)
    write_table(world.bad, FIRST, SECOND)
    recovered = world.ingest()["dbo.bad"]
    assert (recovered.status, recovered.last_sequence) == ("replicating", 2)
    assert world.staged("bad") == FIRST + SECOND


@pytest.fixture
def public_zone() -> Iterator[Path]:
    """A zone folder that another user can reach (pytest's own folders are private)."""
    root = Path(tempfile.mkdtemp(prefix="lakemirror-public-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        for path in root.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(root)


def ingest_as_nobody(zone: Path, warehouse: Warehouse) -> dict[str, list[Any]]:
    """Ingest every table in a child process running as `nobody` (chmod denies root nothing);
    the tables here fail before any Delta table is opened, which a forked child cannot do."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to the user nobody")
    nobody = pwd.getpwnam("nobody")
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            results = {table.qualified_name: ingest_table(table, warehouse)
                       for table in discover_tables(zone)}
            os.write(writer, json.dumps({name: [result.status, result.error_type,
                                                result.error_class, result.error]
                                         for name, result in results.items()}).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        output = pipe.read()
    os.waitpid(child, 0)
    assert output, "the child process reported nothing"
    report: dict[str, list[Any]] = json.loads(output)
    return report


@pytest.mark.parametrize("denied", ["_metadata.json", "folder"])
def test_unreadable_entry_as_another_user_fails_the_table(public_zone, tmp_path, denied):
    folder = write_table(public_zone / "Bad", FIRST)
    path = folder / "_metadata.json" if denied == "_metadata.json" else folder
    path.chmod(0)
    report = ingest_as_nobody(public_zone, Warehouse(tmp_path / "warehouse"))
    status, error_type, error_class, error = report["dbo.bad"]
    assert (status, error_type, error_class) == ("failed", "ZoneAccessError", "user")
    assert f"permission denied on {path}" in error and "Fix:" in error


def test_deleted_mark_with_processed_files_is_written_again_without_a_drop(world):
    write_table(world.bad, FIRST, SECOND)
    assert world.ingest()["dbo.bad"].status == "replicating"
    world.ingest()  # file 1 moves once file 2 is staged (and is purged: retention 0)
    assert (world.bad / "_ProcessedFiles").is_dir()
    recorded = StagingTable(world.warehouse.staging_path("dbo", "bad")).incarnation()
    (world.bad / MARKER).unlink()
    assert find_retirements(discover_tables(world.zone), world.warehouse) == []
    results = world.ingest()
    result = results["dbo.bad"]
    assert result.status == "replicating", result.error
    assert any(f"{MARKER} was deleted" in warning for warning in result.metadata.warnings)
    assert read_incarnation(world.bad) == recorded
    assert world.staged("bad") == FIRST + SECOND
    world.check_contained(results)


def test_garbled_mark_never_drops_and_recovers_once_deleted(world):
    (world.bad / MARKER).write_text("{nope")
    assert find_retirements(discover_tables(world.zone), world.warehouse) == []
    assert world.ingest()["dbo.bad"].error_type == "MetadataError"
    (world.bad / MARKER).unlink()  # no _ProcessedFiles/: the folder counts as new
    [retirement] = find_retirements(discover_tables(world.zone), world.warehouse)
    assert (retirement.qualified_name, retirement.reason) == ("dbo.bad", "recreated")


@pytest.mark.parametrize("owner, name, failure", [
    (ingest_module, "write_parts", OSError(errno.ENOSPC, "No space left on device")),
    (ingest_module.StagingTable, "_commit", Exception(
        "Failed to parse parquet: External: Generic LocalFileSystem error: Unable to copy data "
        "to file: No space left on device (os error 28)")),
], ids=["OSError writing the parts", "delta-rs text committing them"])
def test_disk_full_while_staging_fails_the_table_as_a_system_error(world, monkeypatch, owner,
                                                                    name, failure):
    write_table(world.bad, FIRST, SECOND)
    real = getattr(owner, name)

    def full(first: Any, *args: Any) -> Any:  # a table path, or the StagingTable
        if str(getattr(first, "path", first)).endswith("/bad"):
            raise failure
        return real(first, *args)
    with monkeypatch.context() as patch:
        patch.setattr(owner, name, full)
        results = world.ingest()
    failed = results["dbo.bad"]
    assert (failed.status, failed.error_type, failed.error_class) == (
        "failed", "StorageError", "system")
    assert f"disk full while staging {world.bad / FILE_2}" in failed.error
    assert f"free space in the warehouse at {world.warehouse.staging_path('dbo', 'bad')}" in \
        failed.error and "nothing was lost" in failed.error
    world.check_contained(results)
    assert world.staged("bad") == FIRST and (world.bad / FILE_2).exists()
    assert world.ingest()["dbo.bad"].status == "replicating"
    assert world.staged("bad") == FIRST + SECOND


def test_read_only_zone_fails_the_table_when_a_file_must_move(world, monkeypatch):
    write_table(world.bad, FIRST, SECOND)
    assert world.ingest()["dbo.bad"].last_sequence == 2  # file 1 moves on the next run
    real_replace = os.replace

    def read_only(source: Any, target: Any, **kwargs: Any) -> None:
        if kwargs:  # a move inside the zone (through folder descriptors)
            raise OSError(errno.EROFS, "Read-only file system")
        real_replace(source, target)
    with monkeypatch.context() as patch:
        patch.setattr(zone_module.os, "replace", read_only)
        failed = world.ingest()["dbo.bad"]
    assert (failed.error_type, failed.error_class) == ("ZoneAccessError", "user")
    assert "the landing zone is read-only" in failed.error
    assert "mount the landing zone read-write" in failed.error


def test_unexpected_error_is_a_system_failure_not_a_traceback(world, monkeypatch):
    def broken(*args: Any, **kwargs: Any) -> None:
        raise KeyError("oops")
    monkeypatch.setattr(ingest_module, "detect_files", broken)
    failed = world.ingest()["dbo.bad"]
    assert (failed.status, failed.error_type, failed.error_class) == (
        "failed", "LakemirrorError", "system")
    assert "unexpected KeyError: 'oops'" in failed.error and "--debug" in failed.error


def bomb(path: Path, size: int) -> None:
    """A gzip file of a small header and `size` zero bytes (about 1/1000 of that on disk)."""
    with gzip.open(path, "wb") as stream:
        stream.write(b"id,v\r\n")
        for _ in range(size >> 20):
            stream.write(bytes(1 << 20))


def test_decompression_bomb_is_refused_within_the_limit(world):
    csv = world.zone / "Csv"
    csv.mkdir()
    (csv / "_metadata.json").write_text('{"keyColumns": ["id"], "FileFormat": "CSV"}')
    bomb(csv / "00000000000000000001.csv.gz", 64 << 20)
    tracemalloc.start()
    try:
        results = world.ingest(max_text_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    failed = results["dbo.csv"]
    assert (failed.status, failed.error_type) == ("failed", "UnreadableFileError")
    assert "holds more than 1048576 bytes once decompressed" in failed.error
    assert "split the file" in failed.error
    assert peak < 16 << 20, peak  # the 64 MiB of text were never held
    world.check_contained(results)
