"""An idle run: no new file for any table, every staged change already applied, and the dbt
project and target unchanged since the last build. Such a run neither starts the engine nor
dbt; its statuses come from the last run's monitoring records (a table whose dbt tests failed
stays `degraded` until a run tests it again)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lakemirror.monitor import TableMonitor
from lakemirror.parsed_projects import project_fingerprint
from lakemirror.staging import IngestResult, Warehouse
from lakemirror.status import TableStatus

STATE_FILE = "_lakemirror/last_build.json"  # the project state of the last build
QUIET_VAR = "lakemirror_quiet_relations"  # see quiet_relations

Records = Mapping[tuple[str, str], TableMonitor]


def nothing_new(ingested: Sequence[IngestResult], previous: Records,
                mirrored: Callable[[IngestResult], bool]) -> bool:
    """Whether every table is `settled`."""
    return all(settled(result, previous, mirrored) for result in ingested)


def settled(result: IngestResult, previous: Records,
            mirrored: Callable[[IngestResult], bool]) -> bool:
    """Whether the table staged no file now and its staged files were all applied by the last
    run (which did not fail it: a failed table is built again) into a mirrored table that is
    still there (a deleted one is rebuilt)."""
    record = previous.get((result.table.schema, result.table.name))
    if result.staged_files:
        return False
    if result.last_sequence == 0:
        return True  # nothing staged, nothing to apply
    return (record is not None and record.status != "failed"
            and record.last_sequence_applied == result.last_sequence and mirrored(result))


def quiet_relations(ingested: Sequence[IngestResult], previous: Records,
                    mirrored: Callable[[IngestResult], bool]) -> dict[str, list[str]]:
    """The dbt var naming the mirror models ('schema.table', as in mirror_batches) whose table
    is `settled` with something staged: a build of an unchanged project sends them no MERGE and
    no bookkeeping (macros/mirror/_nothing_to_apply.sql), as an idle run builds nothing."""
    return {QUIET_VAR: sorted(f"{result.table.schema}.{result.table.name}" for result in ingested
                              if result.last_sequence and settled(result, previous, mirrored))}


def as_last_recorded(statuses: Sequence[TableStatus], previous: Records) -> list[TableStatus]:
    """The statuses of an idle run: a table last seen `degraded` is still so."""
    def carried(status: TableStatus) -> TableStatus:
        record = previous.get((status.schema, status.table))
        if status.status == "replicating" and record is not None and record.status == "degraded":
            return dataclasses.replace(status, status="degraded", error=record.error,
                                       error_class=record.error_class)
        return status
    return [carried(status) for status in statuses]


def project_state(project_dir: Path, target: str, dbt_vars: Mapping[str, object]) -> str:
    """A digest of what a build depends on besides the data: the project's files, the target
    and the variables."""
    described = json.dumps([str(project_dir), target, sorted(map(str, dbt_vars.items())),
                            project_fingerprint(project_dir)])
    return hashlib.sha256(described.encode()).hexdigest()


def built_with(layout: Warehouse) -> str | None:
    """The project state of the last build of this warehouse."""
    try:
        text = layout.storage.read_text(STATE_FILE)
        state = None if text is None else json.loads(text).get("project_state")
    except (OSError, ValueError, AttributeError):
        return None
    return state if isinstance(state, str) else None


def record_build(layout: Warehouse, state: str | None) -> None:
    """Record the project state of this build; None when the build left nodes of the
    project's own failed, so that the next run builds again (and reports them again)."""
    layout.storage.write_text(STATE_FILE, json.dumps({"project_state": state}))
