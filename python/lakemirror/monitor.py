"""Table monitoring, like Fabric's: per-table state kept in a control Delta table after each run,
and the publisher's `_partnerEvents.json`, shown by `lakemirror status`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from lakemirror.delta.access import is_delta_table, write_delta
from lakemirror.delta.rows import query_table, read_control_table
from lakemirror.errors import LandingZoneError
from lakemirror.landing.zone import LandingZone, as_door
from lakemirror.landing.zone_door import ZoneDoor, parse_json
from lakemirror.staging.layout import Warehouse
from lakemirror.status import TableStatus
from lakemirror.storage.location import Location
from lakemirror.storage.secrets import redact

if TYPE_CHECKING:  # `lakemirror status` reads records without the ingest machinery
    from lakemirror.staging.ingest import IngestResult

PARTNER_EVENTS_FILE = "_partnerEvents.json"
ErrorClass = Literal["user", "system"]


@dataclass(frozen=True)
class TableMonitor:
    """The monitoring record of one table."""

    schema: str
    table: str
    status: str
    last_sequence_staged: int  # staged by the last run; above the applied one until dbt runs
    last_sequence_applied: int
    rows: int | None
    files_pending: int
    processed_rows: int
    processed_bytes: int
    last_sync: str | None
    error: str | None
    error_class: ErrorClass | None
    warnings: tuple[str, ...] = ()
    folder: str | None = None  # relative to the zone; None in records of older versions


@dataclass(frozen=True)
class PartnerInfo:
    """What `_partnerEvents.json` says about the publisher."""

    partner_name: str
    source_type: str | None
    source_version: str | None
    additional_information: str | None = None  # sourceInfo.additionalInformation, as JSON


MONITOR_SCHEMA = pa.schema([
    ("schema", pa.string()), ("table", pa.string()), ("status", pa.string()),
    ("last_sequence_staged", pa.int64()), ("last_sequence_applied", pa.int64()), ("rows", pa.int64()), ("files_pending", pa.int64()),
    ("processed_rows", pa.int64()), ("processed_bytes", pa.int64()), ("last_sync", pa.string()),
    ("error", pa.string()), ("error_class", pa.string()), ("warnings", pa.list_(pa.string())),
    ("folder", pa.string()),
])
_NOT_COUNTS = ("schema", "table", "folder", "error", "error_class", "warnings")  # shown apart
PARTNER_SCHEMA = pa.schema([("partner_name", pa.string()), ("source_type", pa.string()),
                            ("source_version", pa.string()),
                            ("additional_information", pa.string())])


def monitor_record(result: IngestResult, status: TableStatus, previous: TableMonitor | None,
                   applied_position: int, *, applied_now: bool) -> TableMonitor:
    """This run's monitoring record of one table, accumulating the previous record's counts.
    A failed table synced when the run applied files before its bad one."""
    from lakemirror.landing.changes import ROWS_PER_FILE

    applied = applied_position // ROWS_PER_FILE
    advanced = applied > (previous.last_sequence_applied if previous else 0)
    synced = applied_now and status.rows is not None and (status.status != "failed" or advanced)
    return TableMonitor(
        schema=status.schema, table=status.table, status=status.status,
        last_sequence_staged=result.last_sequence,
        last_sequence_applied=applied,
        rows=status.rows, files_pending=result.files_pending,
        processed_rows=(previous.processed_rows if previous else 0) + result.staged_rows,
        processed_bytes=(previous.processed_bytes if previous else 0) + result.staged_bytes,
        last_sync=_now() if synced else (previous.last_sync if previous else None),
        error=None if status.error is None else redact(status.error),
        error_class=status.error_class,
        warnings=status.warnings,
        folder=status.folder,
    )


def applied_positions(warehouse: Warehouse) -> dict[str, int]:
    """The applied watermark of each mirrored relation ('schema.table')."""
    path = warehouse.control_path("mirror_batches")
    if not is_delta_table(path):
        return {}
    maxima = query_table(path, "select relation_name, max(batch_end) as batch_end "
                               "from delta_table where kind = 'applied' group by relation_name")
    return dict(zip(maxima["relation_name"].to_pylist(), maxima["batch_end"].to_pylist()))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_monitor(warehouse: Warehouse) -> dict[tuple[str, str], TableMonitor]:
    """The records of the last run, by (schema, table) (of two folders differing only by case,
    which both fail, one)."""
    return {(record.schema, record.table): record for record in read_records(warehouse)}


def read_records(warehouse: Warehouse) -> list[TableMonitor]:
    """The records of the last run, one per table folder."""
    rows = _read(warehouse.control_path("table_monitor"))
    return [TableMonitor(**{"last_sequence_staged": row["last_sequence_applied"], **row,
                            "warnings": tuple(row.get("warnings") or ())})
            for row in rows]  # records of older versions have neither warnings nor staged


def with_recorded_folders(statuses: Sequence[TableStatus],
                          records: Mapping[tuple[str, str], TableMonitor]) -> list[TableStatus]:
    """The statuses, those without a folder (a dropped table's is gone) taking the one their
    table's last record names."""
    return [replace(status, folder=record.folder)
            if status.folder is None and (record := records.get((status.schema, status.table)))
            else status for status in statuses]


def write_monitor(warehouse: Warehouse, records: Sequence[TableMonitor],
                  previous: dict[tuple[str, str], TableMonitor] | None = None) -> None:
    """Replace the monitoring records (not when they equal the `previous` ones, as after an
    idle run: a write costs more than the whole idle run)."""
    if previous is not None and {(r.schema, r.table): r for r in records} == previous:
        return
    table = pa.Table.from_pylist([{**asdict(record), "warnings": list(record.warnings)}
                                  for record in records], schema=MONITOR_SCHEMA)
    write_delta(warehouse.control_path("table_monitor"), table, mode="overwrite",
                    schema_mode="overwrite")


def read_partner(warehouse: Warehouse) -> PartnerInfo | None:
    rows = _read(warehouse.control_path("partner"))
    return PartnerInfo(**rows[0]) if rows else None


def record_partner_events(zone: PurePath | ZoneDoor, warehouse: Warehouse) -> PartnerInfo | None:
    """Validate the zone's `_partnerEvents.json` and record it; None when there is none."""
    door = as_door(zone)
    info = parse_partner_events(door.root / PARTNER_EVENTS_FILE, door)
    if info is not None and read_partner(warehouse) != info:
        write_delta(warehouse.control_path("partner"),
                        pa.Table.from_pylist([asdict(info)], schema=PARTNER_SCHEMA),
                        mode="overwrite", schema_mode="overwrite")
    return info


def parse_partner_events(path: PurePath, door: ZoneDoor | None = None) -> PartnerInfo | None:
    """What `_partnerEvents.json` at the zone root (`path`) says; None when there is none. It
    is read through the zone's door: a link, FIFO or oversized file is an error, not read.
    As the SDKs write it: keys in any case, versions as strings or numbers, and any
    `additionalInformation` (kept as JSON)."""
    def error(message: str) -> LandingZoneError:
        return LandingZoneError(f"{PARTNER_EVENTS_FILE}: {message}", file=str(path),
                                hint='write {"partnerName": "...", "sourceInfo": '
                                     '{"sourceType": "...", "sourceVersion": "..."}}')
    data = (door or LandingZone(Path(path.parent))).read_control(path)
    if data is None:
        return None
    try:
        document = parse_json(data)
    except ValueError as failure:
        raise error(str(failure)) from failure
    document = _lower_keys(document)
    if not isinstance(document.get("partnername"), str):
        raise error("partnerName (a string) is required")
    source = _lower_keys(document.get("sourceinfo", {}))
    if not isinstance(source, dict):
        raise error("sourceInfo must be an object")
    scalars = {}
    for name in ("sourceType", "sourceVersion"):
        value = source.get(name.lower())
        if value is not None and (not isinstance(value, (str, int, float))
                                  or isinstance(value, bool)):
            raise error(f"sourceInfo.{name} must be a string or a number")
        scalars[name] = None if value is None else str(value)
    extra = source.get("additionalinformation")
    return PartnerInfo(document["partnername"], scalars["sourceType"], scalars["sourceVersion"],
                       None if extra is None else json.dumps(extra, sort_keys=True))


def _lower_keys(document: Any) -> Any:
    """An object's keys in lower case (other values as they are)."""
    return ({str(key).lower(): value for key, value in document.items()}
            if isinstance(document, dict) else document)


def to_json(records: Sequence[TableMonitor], partner: PartnerInfo | None) -> str:
    return redact(json.dumps({"partner": asdict(partner) if partner else None,
                              "tables": [asdict(record) for record in records]}, indent=2))


def to_text(records: Sequence[TableMonitor], partner: PartnerInfo | None) -> str:
    publisher = ([f"publisher: {partner.partner_name} ({partner.source_type or '?'} "
                  f"{partner.source_version or ''})".replace(" )", ")")] if partner else [])
    if not records:
        return "\n".join([*publisher, "no tables mirrored yet"])
    columns = [field.name for field in fields(TableMonitor) if field.name not in _NOT_COUNTS]
    header = ["table", "folder", *columns, "error"]
    body = [[f"{r.schema}.{r.table}", _cell(r.folder), *(_cell(getattr(r, c)) for c in columns),
             f"[{r.error_class}] {r.error}" if r.error else
             "; ".join(f"warning: {warning}" for warning in r.warnings)] for r in records]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header) - 1)]
    return redact("\n".join([*publisher, *(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip()
        for row in [header, *body])]))


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _read(path: Location) -> list[dict[str, Any]]:
    if not is_delta_table(path):
        return []
    rows: list[dict[str, Any]] = read_control_table(path).to_pylist()
    return rows
