"""Per-table status of a run, as a table for people and JSON for machines."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

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


def to_json(statuses: Sequence[TableStatus], warnings: Sequence[str] = ()) -> str:
    """The run's JSON: each table's status, and the run's own warnings (about the zone), with
    any credential redacted."""
    return redact(json.dumps({"tables": [asdict(status) for status in statuses],
                              "warnings": list(warnings)}, indent=2))


def to_text(statuses: Sequence[TableStatus]) -> str:
    header = ("table", "folder", "status", "last file", "rows", "error")
    rows = [(f"{s.schema}.{s.table}", s.folder or "", s.status, str(s.last_sequence),
             "" if s.rows is None else str(s.rows), s.error or s.note or "") for s in statuses]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[5]
             for row in [header, *rows]]
    return (redact("\n".join(line.rstrip() for line in lines)) if rows
            else "no tables in the landing zone")
