"""The end of a run: each table's status, the project's own nodes, and the monitoring
records."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from lakemirror.delta.access import delta_table, is_delta_table
from lakemirror.delta.known_states import KnownStates
from lakemirror.delta.rows import loaded_row_count
from lakemirror.landing.changes import ROWS_PER_FILE
from lakemirror.monitor import (
    TableMonitor,
    applied_positions,
    monitor_record,
    read_records,
    write_monitor,
)
from lakemirror.node_result import NodeResult, is_model_of
from lakemirror.run.build import mirror_models
from lakemirror.run.log import RunLog
from lakemirror.run.retire import retired_records
from lakemirror.run.settings import RunSettings
from lakemirror.table_scope import Scope
from lakemirror.staging import IngestResult
from lakemirror.staging.lock import control_lock
from lakemirror.status import NodeStatus, TableStatus
from lakemirror.table_outcome import table_status


def statuses(settings: RunSettings, ingested: list[IngestResult], nodes: list[NodeResult],
             known: KnownStates, recorded: Mapping[tuple[str, str], TableMonitor] | None = None
             ) -> list[TableStatus]:
    """Each ingested table's status after the build's `nodes`; the mirrored tables' Delta
    states read on the way are kept in `known` for the next build. A table the run did not
    build has the rows of its `recorded` (last) record: its mirrored table is not read."""
    recorded = recorded or {}
    return [_status(settings, result, nodes, known, recorded.get(
        (result.table.schema, result.table.name))) for result in ingested]


def project_nodes(settings: RunSettings, nodes: list[NodeResult]) -> list[NodeStatus]:
    """The nodes of the build that are the project's own: all but the mirror models (and
    history models) and the tests on them, which the tables' statuses report."""
    mirror = mirror_models(settings.project_dir)
    return [NodeStatus(node.name, node.kind, node.status,
                       None if node.status in ("success", "pass") else node.message,
                       node.unique_id)
            for node in nodes
            if not is_model_of(node.unique_id, mirror)
            and not (node.kind == "test"
                     and any(is_model_of(parent, mirror) for parent in node.depends_on))]


def _status(settings: RunSettings, result: IngestResult, nodes: list[NodeResult],
            known: KnownStates, recorded: TableMonitor | None) -> TableStatus:
    if recorded is not None:
        return table_status(result, nodes, recorded.rows, attempts=settings.backoff.attempts)
    schema, name = result.table.schema, result.table.name
    path = settings.layout.mirrored_path(schema, name)
    try:
        table = delta_table(path) if is_delta_table(path) else None
        rows = None if table is None else loaded_row_count(table)
    except Exception:  # a damaged table: its status already says why
        table, rows = None, None
    if table is not None:
        known.remember(settings.layout.storage, settings.layout.key(path), table)
    return table_status(result, nodes, rows, attempts=settings.backoff.attempts)


def record_run(settings: RunSettings, log: RunLog, ingested: list[IngestResult],
               statuses: list[TableStatus], scope: Scope, known: KnownStates, *,
               applied_now: bool, left_out: Collection[tuple[str, str]] = (),
               retired: Sequence[TableStatus] = ()) -> None:
    """Write this run's monitoring records, keeping those of tables not selected for it (and,
    as `retired`, of the `retired` ones), and save the Delta states it read (`known`) for
    the next process's first build. The tables `left_out` of its build, (schema, table),
    keep their records' applied watermark (of an idle run, mirror_batches is not read)."""
    with control_lock(settings.layout.storage, timeout=settings.lock_timeout,
                      progress=log.progress, lease_seconds=settings.env.lease_seconds):
        try:
            layout = settings.layout
            records = read_records(layout)  # of each folder, whatever its case
            previous = {(record.schema, record.table): record for record in records}
            recorded = {key: previous[key] for key in left_out if key in previous}
            applied = ({} if all((status.schema, status.table) in recorded for status in statuses)
                       else applied_positions(layout))
            kept = [record for record in records if scope.explicit
                    and f"{record.schema}.{record.table}" not in scope]
            write_monitor(layout, kept + [
                monitor_record(result, status, previous.get((status.schema, status.table)),
                               _applied_position(status, applied, recorded),
                               applied_now=applied_now
                               and (status.schema, status.table) not in recorded)
                for result, status in zip(ingested, statuses)]
                + retired_records(retired, previous), previous)
            known.save(layout.storage)
        except Exception as error:  # the run's own status is still printed
            log.progress(f"warning: could not record this run for `lakemirror status`: "
                         f"{type(error).__name__}: {error}")


def _applied_position(status: TableStatus, applied: Mapping[str, int],
                      recorded: Mapping[tuple[str, str], TableMonitor]) -> int:
    """The table's applied watermark: mirror_batches' (`applied`), or its `recorded` one."""
    record = recorded.get((status.schema, status.table))
    if record is not None:
        return record.last_sequence_applied * ROWS_PER_FILE
    return applied.get(f"{status.schema}.{status.table}", 0)
