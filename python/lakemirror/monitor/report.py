"""What `lakemirror status` shows: the last run's records of a warehouse, the age of each
table's oldest pending file, and whether the warehouse is stale (no run for too long)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from lakemirror.errors import ConfigError
from lakemirror.monitor.partner import PartnerInfo, read_partner
from lakemirror.monitor.records import TableMonitor, read_last_runs, read_records, with_last_runs
from lakemirror.staging.layout import Warehouse
from lakemirror.storage.secrets import redact

DEFAULT_STALE_AFTER = 3600.0  # seconds without a run before a warehouse is stale
CONTROL_FOLDER = "_lakemirror"  # what only a lakemirror warehouse holds; its first run writes it


@dataclass(frozen=True)
class WarehouseReport:
    """A warehouse's monitoring records and runs, as of `now`."""

    records: Sequence[TableMonitor]
    partner: PartnerInfo | None
    last_run: datetime | None  # None: no run recorded (or only by an older version)
    stale_after: float
    now: datetime

    @property
    def stale(self) -> bool:
        """No run recorded within `stale_after` seconds."""
        return self.last_run is None or self.seconds_since(self.last_run) > self.stale_after

    @property
    def unhealthy(self) -> bool:
        """Stale, or a table failed or degraded: `lakemirror status` exits with code 1."""
        return self.stale or any(record.status in ("failed", "degraded")
                                 for record in self.records)

    def seconds_since(self, moment: datetime) -> float:
        return max(0.0, (self.now - moment).total_seconds())

    def oldest_pending_seconds(self, record: TableMonitor) -> float | None:
        """The age of the table's oldest file not yet applied; None when none waits (or when
        an older version staged it, without its landing time)."""
        landed = record.oldest_pending_landed
        return None if landed is None else round(self.seconds_since(landed), 3)


def read_report(warehouse: Warehouse, *, stale_after: float, now: datetime) -> WarehouseReport:
    """The report of a warehouse lakemirror made (see `require_warehouse`)."""
    require_warehouse(warehouse)
    runs = read_last_runs(warehouse)
    return WarehouseReport(with_last_runs(read_records(warehouse), runs),
                           read_partner(warehouse), runs.last_run, stale_after, now)


def require_warehouse(warehouse: Warehouse) -> None:
    """A folder or prefix without lakemirror's control data (a mistyped path) is a
    ConfigError, not a healthy empty warehouse."""
    storage = warehouse.storage
    if not storage.is_folder(CONTROL_FOLDER):
        where = storage.location("")
        missing = not storage.is_folder("")
        raise ConfigError(
            f"{where} is not a lakemirror warehouse: "
            + ("it does not exist" if missing else
               f"it holds no {CONTROL_FOLDER}/ folder, which every lakemirror run writes"),
            hint="pass the --warehouse (or LAKEMIRROR_WAREHOUSE) that `lakemirror run` mirrors "
                 "into; a new warehouse has one after its first run")


def table_fields(report: WarehouseReport, record: TableMonitor) -> dict[str, Any]:
    """A table's entry in `status --json`: its record, the age of its oldest pending file."""
    fields = asdict(record)
    del fields["pending_landed"]
    landed = record.oldest_pending_landed
    return {**fields, "oldest_pending_landed": None if landed is None else landed.isoformat(),
            "oldest_pending_seconds": report.oldest_pending_seconds(record)}


def to_json(report: WarehouseReport) -> str:
    return redact(json.dumps({
        "partner": asdict(report.partner) if report.partner else None,
        "last_run": None if report.last_run is None else report.last_run.isoformat(),
        "stale": report.stale, "stale_after_seconds": report.stale_after,
        "tables": [table_fields(report, record) for record in report.records]}, indent=2))


Column = tuple[str, Callable[[WarehouseReport, TableMonitor], Any]]
COLUMNS: tuple[Column, ...] = (
    ("folder", lambda _, r: r.folder), ("status", lambda _, r: r.status),
    ("last_sequence_staged", lambda _, r: r.last_sequence_staged),
    ("last_sequence_applied", lambda _, r: r.last_sequence_applied),
    ("rows", lambda _, r: r.rows), ("files_pending", lambda _, r: r.files_pending),
    ("oldest_pending_seconds", lambda report, r: _whole(report.oldest_pending_seconds(r))),
    ("applied_latency_seconds", lambda _, r: _whole(r.applied_latency_seconds)),
    ("processed_rows", lambda _, r: r.processed_rows),
    ("processed_bytes", lambda _, r: r.processed_bytes),
    ("last_sync", lambda _, r: r.last_sync), ("last_run", lambda _, r: r.last_run),
)


def to_text(report: WarehouseReport) -> str:
    partner = report.partner
    lines = ([f"publisher: {partner.partner_name} ({partner.source_type or '?'} "
              f"{partner.source_version or ''})".replace(" )", ")")] if partner else [])
    lines.append(_runs_text(report))
    if not report.records:
        return redact("\n".join([*lines, "no tables mirrored yet"]))
    header = ["table", *(name for name, _ in COLUMNS), "error"]
    body = [[f"{r.schema}.{r.table}", *(_cell(value(report, r)) for _, value in COLUMNS),
             f"[{r.error_class}] {r.error}" if r.error and r.error_class else r.error or
             "; ".join(f"warning: {warning}" for warning in r.warnings)] for r in report.records]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header) - 1)]
    return redact("\n".join([*lines, *(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip()
        for row in [header, *body])]))


def _runs_text(report: WarehouseReport) -> str:
    if report.last_run is None:
        return (f"STALE: no run of this version recorded (stale after "
                f"{report.stale_after:g} s)")
    ago = (f"last run: {report.last_run.isoformat()} "
           f"({report.seconds_since(report.last_run):.0f} s ago)")
    return f"STALE: {ago}, more than {report.stale_after:g} s" if report.stale else ago


def _whole(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)
