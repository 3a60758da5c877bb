"""Table monitoring, like Fabric's: the per-table record each run keeps in a control Delta table
(`table_monitor`), and when each table was last looked at, in a small file every run rewrites
(`_lakemirror/last_run.json`): an idle run changes no record, and a Delta commit would cost more
than the whole idle run."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.delta.access import is_delta_table, write_delta
from lakemirror.delta.rows import query_table, read_control_table
from lakemirror.monitor.pending import Landed, applied_latency, known_landings
from lakemirror.staging.layout import Warehouse
from lakemirror.status import TableStatus
from lakemirror.storage.location import Location
from lakemirror.storage.secrets import redact

if TYPE_CHECKING:  # `lakemirror status` reads records without the ingest machinery
    from lakemirror.staging.ingest import IngestResult

ErrorClass = Literal["user", "system"]
LAST_RUN_FILE = "_lakemirror/last_run.json"


@dataclass(frozen=True)
class TableMonitor:
    """The monitoring record of one table."""

    schema: str
    table: str
    status: str
    last_sequence_staged: int  # staged by the last run; above the applied one until dbt runs
    last_sequence_applied: int
    rows: int | None
    files_pending: int  # landed and not yet applied: waiting (behind a gap too) or staged
    processed_rows: int
    processed_bytes: int
    last_sync: str | None
    error: str | None
    error_class: ErrorClass | None
    warnings: tuple[str, ...] = ()
    folder: str | None = None  # relative to the zone; None in records of older versions
    # None or empty in records of older versions:
    last_run: str | None = None  # when a run last looked at the table
    applied_latency_seconds: float | None = None  # from landing to applied, of the last file
    pending_landed: tuple[Landed, ...] = ()  # when the files not yet applied landed, as listed

    @property
    def oldest_pending_landed(self) -> datetime | None:
        """When the oldest file not yet applied landed (its last-modified time as listed);
        None when none is pending (a retired table keeps the times of its last files)."""
        if not self.pending_landed or not self.files_pending:
            return None
        oldest = min(landed.landed_ns for landed in self.pending_landed)
        return datetime.fromtimestamp(oldest / 1e9, timezone.utc)


MONITOR_SCHEMA = pa.schema([
    ("schema", pa.string()), ("table", pa.string()), ("status", pa.string()),
    ("last_sequence_staged", pa.int64()), ("last_sequence_applied", pa.int64()),
    ("rows", pa.int64()), ("files_pending", pa.int64()),
    ("processed_rows", pa.int64()), ("processed_bytes", pa.int64()), ("last_sync", pa.string()),
    ("error", pa.string()), ("error_class", pa.string()), ("warnings", pa.list_(pa.string())),
    ("folder", pa.string()), ("last_run", pa.string()), ("applied_latency_seconds", pa.float64()),
    ("pending_landed", pa.list_(pa.struct([("sequence", pa.int64()),
                                           ("landed_ns", pa.int64())]))),
])


def monitor_record(result: IngestResult, status: TableStatus, previous: TableMonitor | None,
                   applied_position: int, *, applied_now: bool) -> TableMonitor:
    """This run's monitoring record of one table, accumulating the previous record's counts.
    A failed table synced when the run applied files before its bad one. Files staged and not
    yet applied (after `lakemirror ingest`, or a failed build) count as pending."""
    from lakemirror.landing.changes import ROWS_PER_FILE

    now = datetime.now(timezone.utc)
    applied = applied_position // ROWS_PER_FILE
    advanced = applied > (previous.last_sequence_applied if previous else 0)
    synced = applied_now and status.rows is not None and (status.status != "failed" or advanced)
    landings = known_landings(
        [Landed(file.sequence, file.mtime_ns) for file in result.landed],
        previous.pending_landed if previous else (), staged=result.last_sequence,
        listed_now=status.status != "failed" or bool(result.landed))
    return TableMonitor(
        schema=status.schema, table=status.table, status=status.status,
        last_sequence_staged=result.last_sequence,
        last_sequence_applied=applied,
        rows=status.rows,
        files_pending=result.files_pending + max(0, result.last_sequence - applied),
        processed_rows=(previous.processed_rows if previous else 0) + result.staged_rows,
        processed_bytes=(previous.processed_bytes if previous else 0) + result.staged_bytes,
        last_sync=_stamp(now) if synced else (previous.last_sync if previous else None),
        error=None if status.error is None else redact(status.error),
        error_class=status.error_class,
        warnings=status.warnings,
        folder=status.folder,
        last_run=_stamp(now),
        applied_latency_seconds=applied_latency(
            landings, applied, None if previous is None else previous.last_sequence_applied,
            None if previous is None else previous.applied_latency_seconds,
            now_ns=int(now.timestamp() * 1e9) if applied_now else None),
        pending_landed=tuple(Landed(sequence, landed) for sequence, landed
                             in sorted(landings.items()) if sequence > applied),
    )


def applied_positions(warehouse: Warehouse) -> dict[str, int]:
    """The applied watermark of each mirrored relation ('schema.table')."""
    path = warehouse.control_path("mirror_batches")
    if not is_delta_table(path):
        return {}
    maxima = query_table(path, "select relation_name, max(batch_end) as batch_end "
                               "from delta_table where kind = 'applied' group by relation_name")
    return dict(zip(maxima["relation_name"].to_pylist(), maxima["batch_end"].to_pylist()))


def downstream_positions(warehouse: Warehouse, built_since: datetime) -> dict[str, int]:
    """Per mirrored relation ('schema.table'), the lowest position the downstream models reading
    its changes (`mirror_changes`) recorded at their last build, among the models built since
    `built_since`: the changes staging compaction keeps for their next build."""
    path = warehouse.control_path("change_watermarks")
    if not is_delta_table(path):
        return {}
    builds = query_table(path, """
select mirror_name, position, recorded_at from (
    select mirror_name, position, recorded_at, row_number() over (
        partition by model_name, mirror_name order by recorded_at desc, position desc) as newest
    from delta_table) as builds
where newest = 1""")
    recent = builds.filter(pc.greater_equal(builds["recorded_at"],
                                            built_since.strftime("%Y-%m-%d %H:%M:%S")))
    lowest = recent.group_by("mirror_name").aggregate([("position", "min")])
    return dict(zip(lowest["mirror_name"].to_pylist(), lowest["position_min"].to_pylist()))


def unrecorded_claims(warehouse: Warehouse) -> dict[str, list[int]]:
    """Per mirrored relation, the batch ends its runs claimed beyond its applied watermark,
    newest first: batches whose run stopped before recording them applied (their MERGE may
    have committed; the next run records them)."""
    path = warehouse.control_path("mirror_batches")
    if not is_delta_table(path):
        return {}
    claims = query_table(path, """
select claimed.relation_name, claimed.batch_end
from delta_table as claimed
left join (select relation_name, max(batch_end) as batch_end from delta_table
           where kind = 'applied' group by relation_name) as applied
    on applied.relation_name = claimed.relation_name
where claimed.kind = 'claimed'
  and (applied.batch_end is null or claimed.batch_end > applied.batch_end)
order by claimed.batch_end desc""")
    found: dict[str, list[int]] = {}
    for name, end in zip(claims["relation_name"].to_pylist(), claims["batch_end"].to_pylist()):
        found.setdefault(name, []).append(end)
    return found


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def read_monitor(warehouse: Warehouse) -> dict[tuple[str, str], TableMonitor]:
    """The records of the last run, by (schema, table) (of two folders differing only by case,
    which both fail, one)."""
    return {(record.schema, record.table): record for record in read_records(warehouse)}


def read_records(warehouse: Warehouse) -> list[TableMonitor]:
    """The records of the last run, one per table folder (records of older versions have
    neither warnings, staged sequence nor the times of runs and files)."""
    return [TableMonitor(**{"last_sequence_staged": row["last_sequence_applied"], **row,
                            "warnings": tuple(row.get("warnings") or ()),
                            "pending_landed": tuple(Landed(**landed) for landed
                                                    in row.get("pending_landed") or ())})
            for row in read_rows(warehouse.control_path("table_monitor"))]


def with_recorded_folders(statuses: Sequence[TableStatus],
                          records: Mapping[tuple[str, str], TableMonitor]) -> list[TableStatus]:
    """The statuses, those without a folder (a dropped table's is gone) taking the one their
    table's last record names."""
    return [replace(status, folder=record.folder)
            if status.folder is None and (record := records.get((status.schema, status.table)))
            else status for status in statuses]


def write_monitor(warehouse: Warehouse, records: Sequence[TableMonitor],
                  previous: dict[tuple[str, str], TableMonitor] | None = None) -> None:
    """Replace the monitoring records (not when they equal the `previous` ones but for the
    time of the run, as after an idle run), and record the time of this run and of the last
    run of each table."""
    if previous is None or _run_free(records) != _run_free(previous.values()):
        table = pa.Table.from_pylist([{**asdict(record), "warnings": list(record.warnings)}
                                      for record in records], schema=MONITOR_SCHEMA)
        write_delta(warehouse.control_path("table_monitor"), table, mode="overwrite",
                    schema_mode="overwrite")
    earlier = read_last_runs(warehouse).tables  # newer than the records of idle runs
    tables = {f"{record.schema}.{record.table}": _latest(
        record.last_run, earlier.get(f"{record.schema}.{record.table}")) for record in records}
    warehouse.storage.write_text(LAST_RUN_FILE, json.dumps(
        {"last_run": _stamp(datetime.now(timezone.utc)), "tables": tables}, indent=2))


def _run_free(records: Sequence[TableMonitor] | Any) -> dict[tuple[str, str], TableMonitor]:
    return {(record.schema, record.table): replace(record, last_run=None) for record in records}


@dataclass(frozen=True)
class LastRuns:
    """When a run last finished recording (None: none recorded it, or an older version did),
    and when one last looked at each table ('schema.table')."""

    last_run: datetime | None = None
    tables: Mapping[str, str | None] = field(default_factory=dict)


def read_last_runs(warehouse: Warehouse) -> LastRuns:
    """What `_lakemirror/last_run.json` says; nothing when it is missing or unreadable (the
    next run rewrites it)."""
    try:
        document = json.loads(warehouse.storage.read_text(LAST_RUN_FILE) or "{}")
        tables = {str(name): None if time is None else str(time)
                  for name, time in dict(document.get("tables") or {}).items()}
        stamp = document.get("last_run")
        last_run = None if stamp is None else datetime.fromisoformat(stamp)
        if last_run is not None and last_run.tzinfo is None:
            last_run = last_run.replace(tzinfo=timezone.utc)
        return LastRuns(last_run, tables)
    except (ValueError, TypeError, AttributeError):
        return LastRuns(None, {})


def with_last_runs(records: Sequence[TableMonitor], runs: LastRuns) -> list[TableMonitor]:
    """The records, each with the time of the last run that looked at its table (an idle run
    records it only in `_lakemirror/last_run.json`)."""
    return [replace(record, last_run=_latest(
        record.last_run, runs.tables.get(f"{record.schema}.{record.table}")))
        for record in records]


def _latest(*stamps: str | None) -> str | None:
    """The latest of times stamped alike (ISO, UTC, in seconds); None when none is known."""
    return max((stamp for stamp in stamps if stamp), default=None)


def read_rows(path: Location) -> list[dict[str, Any]]:
    """The rows of a small control table; none when it does not exist yet."""
    if not is_delta_table(path):
        return []
    rows: list[dict[str, Any]] = read_control_table(path).to_pylist()
    return rows
