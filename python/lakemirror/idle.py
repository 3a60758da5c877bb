"""An idle run: no new file for any table, every staged change already applied, and the dbt
project and target unchanged since the last build. Such a run neither starts the engine nor
dbt; its statuses come from the last run's monitoring records (a table whose dbt tests failed
stays `degraded` until a run tests it again). A run where only some tables got something new
builds those alone (and the project's own models): the others are left out as if idle."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lakemirror.monitor import TableMonitor
from lakemirror.naming import is_selectable, staging_table_name
from lakemirror.parsed_projects import project_fingerprint
from lakemirror.staging import IngestResult, Warehouse
from lakemirror.status import TableStatus

STATE_FILE = "_lakemirror/last_build.json"  # the project state of the last build

Records = Mapping[tuple[str, str], TableMonitor]


def settled_tables(ingested: Sequence[IngestResult], previous: Records,
                   mirrored: Callable[[IngestResult], bool]) -> frozenset[tuple[str, str]]:
    """The (schema, table) of the `settled` tables: all of them, and an unchanged project,
    make an idle run."""
    return frozenset((result.table.schema, result.table.name) for result in ingested
                     if settled(result, previous, mirrored))


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


def left_out(settled_keys: frozenset[tuple[str, str]], previous: Records) -> Records:
    """The last records of the `settled` tables, which a build of an unchanged project leaves
    out (their mirror and history models and the tests on them), as an idle run builds
    nothing: their statuses are as last recorded (`as_last_recorded`). A table whose model
    name dbt's selection cannot spell (`is_selectable`) is built instead: with nothing new,
    its model applies an empty batch."""
    return {key: record for key, record in previous.items()
            if key in settled_keys and is_selectable(staging_table_name(*key))}


def as_last_recorded(statuses: Sequence[TableStatus], recorded: Records) -> list[TableStatus]:
    """The statuses, those of the tables the run did not build (`recorded`: their last
    records) as last recorded: a table last seen `degraded` is still so."""
    def carried(status: TableStatus) -> TableStatus:
        record = recorded.get((status.schema, status.table))
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
