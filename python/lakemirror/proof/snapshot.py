"""A source snapshot for `lakemirror resync`: a full export of the source table, as one Parquet
file, one delimited-text file (CSV with a header line), or a folder of such files, on disk or in
object storage.

It is read through the landing zone's doors (`landing.zone`, `landing.object_zone`): a local file
must be a regular file, opened without following a link; a URL is read with the storage options
its location carries. Its columns must be the table's staged data columns, its values must cast
to the staged types, and its keys must be unique and not NULL; anything else is a
`SnapshotError` naming the table, the file and the fix, raised before anything is written (a
snapshot that is not there is a `ConfigError`). In a
text file an empty field is NULL, a quoted empty field ("") the empty string.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import reduce
from pathlib import Path, PurePath

import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.errors import ConfigError, SnapshotError
from lakemirror.landing.zone import LandingZone, open_zone
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.storage.location import Location

FORMATS = {".parquet": "parquet", ".csv": "csv"}  # file name suffix → format
SKIPPED = ("_", ".")  # names in a snapshot folder that are no data (_SUCCESS, .crc files)


@dataclass(frozen=True)
class Snapshot:
    """The rows of a snapshot, in the staged columns and types, and where they came from."""

    name: str
    rows: pa.Table


@dataclass(frozen=True)
class Target:
    """What a snapshot must fit: the table's name, its staged data columns with their types,
    and its keys."""

    table: str
    schema: pa.Schema
    keys: tuple[str, ...]


def read_snapshot(location: Location, target: Target) -> Snapshot:
    """The snapshot at `location` (a file or a folder of files), checked against `target`."""
    door, files = _files(location, target)
    tables = [_cast(_read(door, path, target), target, str(path)) for path in files]
    rows = pa.concat_tables(tables)
    _check_keys(rows, target, str(location))
    return Snapshot(str(location), rows)


def _files(location: Location, target: Target) -> tuple[ZoneDoor, list[PurePath]]:
    """The door that reads the snapshot and its data files (one, or those of its folder)."""
    door = _parent_door(location)
    entry = (door.entry(door.root / _name(location))
             if not isinstance(location, Path) or location.parent.is_dir() else None)
    if entry is None:
        raise ConfigError(f"snapshot {location} does not exist",
                          hint="give the path or URL of a Parquet or CSV file, or a folder")
    if entry.kind == "folder":
        found = [item for item in door.entries(entry.path) if not item.name.startswith(SKIPPED)]
    else:
        found = [entry]
    for item in found:
        if item.kind != "file":
            raise SnapshotError(f"{item.path} is {item.what}, not a regular file",
                                table=target.table, file=str(item.path),
                                hint="give the real file: lakemirror never follows a link, "
                                     "nor reads a FIFO or a device")
        _format(item.path, target)
    if not found:
        raise SnapshotError(f"snapshot folder {location} holds no data file",
                            table=target.table, hint="export the table as .parquet or .csv")
    return door, [item.path for item in found]


def _parent_door(location: Location) -> ZoneDoor:
    """A door to the folder or prefix that holds the snapshot."""
    if isinstance(location, Path):
        return LandingZone(location.parent)
    parent = location.prefix.rsplit("/", 1)[0] if "/" in location.prefix else ""
    return open_zone(replace(location, prefix=parent))


def _name(location: Location) -> str:
    name = location.name
    if not name:
        raise ConfigError(f"snapshot {location} names no file or folder",
                          hint="give the URL of a file or a folder below the bucket")
    return name


def _format(path: PurePath, target: Target) -> str:
    found = FORMATS.get(path.suffix.lower())
    if found is None:
        raise SnapshotError(f"snapshot file {path.name} is neither Parquet nor CSV",
                            table=target.table, file=str(path),
                            hint=f"name snapshot files {' or '.join(FORMATS)}")
    return found


def _read(door: ZoneDoor, path: PurePath, target: Target) -> pa.Table:
    """One snapshot file's rows as written (a text file's values as strings)."""
    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    try:
        with door.open(path) as opened:
            if _format(path, target) == "parquet":
                return pq.read_table(opened)
            return csv.read_csv(opened, convert_options=csv.ConvertOptions(
                column_types=dict.fromkeys(target.schema.names, pa.string()),
                null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, OSError) as error:
        raise SnapshotError(f"snapshot file {path.name} cannot be read: {error}",
                            table=target.table, file=str(path),
                            hint="export the table again as Parquet or as CSV with a header "
                                 "line") from None


def _cast(rows: pa.Table, target: Target, file: str) -> pa.Table:
    """The file's rows in the staged columns and types; a missing or extra column or a value
    that does not cast is refused, naming it."""
    names = list(target.schema.names)
    missing = [name for name in names if name not in rows.column_names]
    extra = [name for name in rows.column_names if name not in names]
    if missing or extra:
        found = "; ".join(part for part in (
            f"missing {', '.join(map(repr, missing))}" if missing else "",
            f"extra {', '.join(map(repr, extra))}" if extra else "") if part)
        raise SnapshotError(f"the snapshot's columns do not fit the table: {found}",
                            table=target.table, file=file,
                            hint=f"export exactly the table's columns ({', '.join(names)}), "
                                 "with no row marker")
    columns = []
    for field in target.schema:
        try:
            columns.append(rows.column(field.name).cast(field.type, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise SnapshotError(
                f"column {field.name!r} does not cast to the table's type {field.type}: "
                f"{error}", table=target.table, file=file,
                hint=f"export {field.name!r} as {field.type} values") from None
    return pa.Table.from_arrays(columns, schema=target.schema)


def _check_keys(rows: pa.Table, target: Target, origin: str) -> None:
    """Refuse NULL keys and keys that occur twice, naming a sample."""
    hint = "export each key once, with every key column set"
    for key in target.keys:
        if rows.column(key).null_count:
            raise SnapshotError(f"key column {key!r} is NULL in a row of the snapshot",
                                table=target.table, file=origin, hint=hint)
    keys = list(target.keys)
    ordered = rows.select(keys).take(pc.sort_indices(
        rows.select(keys), sort_keys=[(key, "ascending") for key in keys]))
    earlier, later = ordered.slice(0, max(ordered.num_rows - 1, 0)), ordered.slice(1)
    repeats = reduce(pc.and_, [pc.equal(earlier.column(key), later.column(key)) for key in keys])
    repeated = int(pc.sum(repeats).as_py() or 0)
    if repeated:
        sample = earlier.filter(repeats).slice(0, 1).to_pylist()[0]
        raise SnapshotError(f"keys occur more than once in the snapshot, such as "
                            f"{_shown(sample, keys)} ({repeated} rows repeat a key)",
                            table=target.table, file=origin, hint=hint)


def _shown(key: dict[str, object], names: Sequence[str]) -> str:
    return ", ".join(f"{name}={key[name]!r}" for name in names)
