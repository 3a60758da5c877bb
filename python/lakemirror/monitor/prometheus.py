"""`lakemirror status --prometheus`: the status in Prometheus's text exposition format, for
node_exporter's textfile collector or a Pushgateway. Gauges per table (labels `schema` and
`table`), and the warehouse's last run and staleness."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lakemirror.monitor.records import TableMonitor
from lakemirror.monitor.report import WarehouseReport

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

STATUSES = ("replicating", "waiting", "failed", "degraded", "retired")  # each a 0/1 series
Measure = Callable[[WarehouseReport, TableMonitor], float | None]
TABLE_GAUGES: tuple[tuple[str, str, Measure], ...] = (
    ("files_pending", "Files landed and not yet applied (behind a gap too).",
     lambda _, r: r.files_pending),
    ("oldest_pending_seconds", "Age of the oldest file not yet applied (0: none waits).",
     lambda report, r: report.oldest_pending_seconds(r) or 0.0),
    ("rows", "Rows of the mirrored table.", lambda _, r: r.rows),
    ("last_sequence_applied", "Sequence number of the last file applied.",
     lambda _, r: r.last_sequence_applied),
    ("last_sequence_staged", "Sequence number of the last file staged.",
     lambda _, r: r.last_sequence_staged),
    ("last_sync_timestamp_seconds", "When a run last applied changes to the table.",
     lambda report, r: _timestamp(r.last_sync)),
    ("last_run_timestamp_seconds", "When a run last looked at the table.",
     lambda report, r: _timestamp(r.last_run)),
    ("applied_latency_seconds", "From landing to applied, of the last file applied.",
     lambda _, r: r.applied_latency_seconds),
)


def registry_of(report: WarehouseReport) -> CollectorRegistry:
    """A fresh registry holding the report's gauges (absent values: no sample)."""
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    labels = ("schema", "table")
    for name, description, measure in TABLE_GAUGES:
        gauge = Gauge(f"lakemirror_table_{name}", description, labels, registry=registry)
        for record in report.records:
            value = measure(report, record)
            if value is not None:
                gauge.labels(record.schema, record.table).set(value)
    status = Gauge("lakemirror_table_status", "1 for the table's status, 0 for the others.",
                   (*labels, "status"), registry=registry)
    for record in report.records:
        for state in dict.fromkeys((*STATUSES, record.status)):
            status.labels(record.schema, record.table, state).set(state == record.status)
    if report.last_run is not None:
        Gauge("lakemirror_last_run_timestamp_seconds", "When the last run recorded its tables.",
              registry=registry).set(report.last_run.timestamp())
    Gauge("lakemirror_stale", "1 when no run was recorded within the stale threshold.",
          registry=registry).set(report.stale)
    Gauge("lakemirror_stale_after_seconds", "The stale threshold.",
          registry=registry).set(report.stale_after)
    return registry


def exposition(report: WarehouseReport) -> str:
    """The report in Prometheus's text format."""
    from prometheus_client import generate_latest

    return generate_latest(registry_of(report)).decode("utf-8")


def write_textfile(report: WarehouseReport, path: Path) -> None:
    """Write the report to `path` atomically (a temporary file beside it, renamed), as
    node_exporter's textfile collector needs (name it `*.prom`)."""
    from prometheus_client import write_to_textfile

    write_to_textfile(str(path), registry_of(report))


def _timestamp(stamp: str | None) -> float | None:
    from datetime import datetime

    return None if stamp is None else datetime.fromisoformat(stamp).timestamp()
