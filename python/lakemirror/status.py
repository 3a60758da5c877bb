"""Per-table status of a run, and the outcome of the project's own nodes it built, as a table
for people and JSON for machines."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from lakemirror.node_result import FAILED_STATUSES
from lakemirror.storage.secrets import redact

if TYPE_CHECKING:  # the ingest machinery is not needed to show a status
    from lakemirror.staging.ingest import Status


@dataclass(frozen=True)
class TableStatus:
    """One mirrored table after a run."""

    schema: str
    table: str
    status: Status | Literal["dropped", "degraded", "retired"]
    last_sequence: int
    rows: int | None
    error: str | None
    note: str | None = None
    error_class: Literal["user", "system"] | None = None
    warnings: tuple[str, ...] = ()  # e.g. unknown _metadata.json keys, ignored entries
    folder: str | None = None  # relative to the zone (`Sales.schema/Orders`); None if unknown

    @property
    def unhealthy(self) -> bool:
        """Failed, or mirrored with failing dbt tests: the run's exit code is then 1."""
        return self.status in ("failed", "degraded")


@dataclass(frozen=True)
class NodeStatus:
    """One node of the project's own that a run built (a model, test, seed, snapshot or
    hook of the user's, not a mirror table's): dbt's status and error."""

    name: str
    resource_type: str
    status: str  # dbt's: success, error, fail, warn, pass, skipped...
    error: str | None
    unique_id: str

    @property
    def failed(self) -> bool:
        """Failed (or skipped for a failure upstream): the run's exit code is then 1."""
        return self.status in FAILED_STATUSES


def to_json(statuses: Sequence[TableStatus], warnings: Sequence[str] = (),
            models: Sequence[NodeStatus] = ()) -> str:
    """The run's JSON: each table's status, each node of the project's own that it built,
    and the run's own warnings (about the zone), with any credential redacted."""
    return redact(json.dumps({"tables": [asdict(status) for status in statuses],
                              "models": [asdict(node) for node in models],
                              "warnings": list(warnings)}, indent=2))


def models_text(models: Sequence[NodeStatus]) -> str:
    """The project's own nodes a run built: one line of counts, and each failed one."""
    if not models:
        return ""
    failed = [node for node in models if node.failed]
    lines = [f"models and tests of the project: {len(models) - len(failed)} ok, "
             f"{len(failed)} failed"]
    lines += [f"  {node.resource_type} {node.name} {node.status}: {node.error or 'no message'}"
              for node in failed]
    return redact("\n".join(lines))


def run_text(statuses: Sequence[TableStatus], models: Sequence[NodeStatus] = ()) -> str:
    """The run's printed report: the project's own nodes it built, then its tables."""
    return "\n".join(filter(None, [models_text(models), to_text(statuses)]))


def to_text(statuses: Sequence[TableStatus]) -> str:
    header = ("table", "folder", "status", "last file", "rows", "error")
    rows = [(f"{s.schema}.{s.table}", s.folder or "", s.status, str(s.last_sequence),
             "" if s.rows is None else str(s.rows), s.error or s.note or "") for s in statuses]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[5]
             for row in [header, *rows]]
    return (redact("\n".join(line.rstrip() for line in lines)) if rows
            else "no tables in the landing zone")
