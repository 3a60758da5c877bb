"""The last phase of a run: maintain the healthy tables whose maintenance is due."""

from __future__ import annotations

from lakemirror.run.log import RunLog
from lakemirror.run.settings import RunSettings


def maintain(settings: RunSettings, log: RunLog, names: list[str]) -> None:
    """Maintain the tables `names` (`schema.table`, their locks held) that are due; a failure
    is a warning: maintenance is housekeeping, and the run's outcome stands."""
    from lakemirror.maintenance import due_tables, maintain_tables

    try:
        due = due_tables(settings.warehouse, names, hours=settings.env.maintenance_hours)
        if due:
            maintain_tables(settings.layout, due, progress=log.progress)
    except Exception as error:  # maintenance is housekeeping: the run's outcome stands
        log.warn(f"maintenance did not finish: {type(error).__name__}: {error}; "
                 "run `lakemirror maintain` to see why")
