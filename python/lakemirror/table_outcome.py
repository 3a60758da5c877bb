"""What a run did to each table. Any failure, expected or not, becomes that table's `failed`
status with its class (`user`: the landing zone must change; `system`: lakemirror, the engine
or the machine), the file and a fix; an engine crash is blamed on the model it was running;
the table's history model counts as its mirror model does: its failure fails the table, and a
failing dbt test on either makes the table `degraded`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from lakemirror.codegen.history import HISTORY_SUFFIX
from lakemirror.conflicts import classify_conflict
from lakemirror.errors import CorruptTableError, EngineCrashError
from lakemirror.landing import LandingTable
from lakemirror.node_result import NodeResult, is_model_of
from lakemirror.staging import IngestResult, staging_table_name
from lakemirror.staging.failures import as_failure
from lakemirror.status import TableStatus
from lakemirror.storage.location import Location


def failed_ingest(table: LandingTable, error: Exception, warehouse: Location,
                  base: IngestResult | None = None, *, debug: bool = False) -> IngestResult:
    """`table`'s failed ingest result for any error (classified as staging classifies its
    own; `debug` raises an unexpected one instead); `base` keeps what was staged before."""
    failure = as_failure(error, table, file=None, warehouse=warehouse, debug=debug)
    return dataclasses.replace(base or IngestResult(table, "failed"), status="failed",
                               error=str(failure), error_class=failure.error_class,
                               error_type=type(failure).__name__,
                               damaged=isinstance(failure, CorruptTableError))


def table_status(result: IngestResult, nodes: Sequence[NodeResult], rows: int | None, *,
                 attempts: int) -> TableStatus:
    """The table's status after ingest and `dbt build`, with its ingest's warnings and its
    folder."""
    return dataclasses.replace(_outcome(result, nodes, rows, attempts=attempts),
                               warnings=result.metadata.warnings,
                               folder=result.table.zone_folder)


def _outcome(result: IngestResult, nodes: Sequence[NodeResult], rows: int | None, *,
             attempts: int) -> TableStatus:
    schema, name = result.table.schema, result.table.name
    model = staging_table_name(schema, name)
    models = (model, model + HISTORY_SUFFIX)  # its mirror model and its history model
    if result.status == "failed":
        return TableStatus(schema, name, "failed", result.last_sequence, rows, result.error,
                           error_class=result.error_class)
    model_errors = [(node.name, node.message or node.status)
                    for node in nodes if node.failed and is_model_of(node.unique_id, models)]
    if model_errors:
        failed, message = model_errors[0]
        conflict = classify_conflict(message)
        reason = f"{conflict.kind.value} after {attempts} attempts: " if conflict else ""
        return TableStatus(schema, name, "failed", result.last_sequence, rows,
                           f"dbt model {failed}: {reason}{message}",
                           error_class="system")
    failed_tests = [node for node in nodes if node.kind == "test" and node.failed
                    and any(is_model_of(parent, models) for parent in node.depends_on)]
    if failed_tests:
        return TableStatus(
            schema, name, "degraded", result.last_sequence, rows,
            "the data is mirrored, but dbt tests failed: " + "; ".join(
                f"{node.name} ({node.status}: {node.message or 'no message'})"
                for node in failed_tests),
            error_class="user")
    return TableStatus(schema, name, result.status, result.last_sequence, rows, result.error)


def rebuild_after_crash(crash: EngineCrashError,
                        rebuild: Callable[[list[str]], list[NodeResult]], *,
                        progress: Callable[[str], None]) -> list[NodeResult]:
    """The results of a build the engine was lost in. The first model to finish after the
    loss was running then: it fails with the crash. The models the crash cut off are built
    once more on a fresh engine; if that engine is lost too, they fail with it."""
    before = [node for node in crash.nodes if not _after(node, crash)]
    after = sorted((node for node in crash.nodes if _after(node, crash)),
                   key=lambda node: node.completed_at or float("inf"))
    models = [node for node in after if node.kind == "model"]
    if not models:
        return [*before, *(_with_crash(node, crash) for node in after)]
    culprit, cut_off = models[0], [node.name for node in models[1:]]
    done = [*before, _with_crash(culprit, crash)]
    if not cut_off:
        return done
    progress(f"{crash.message}; building {', '.join(cut_off)} again on a fresh engine")
    try:
        return done + rebuild(cut_off)
    except EngineCrashError as again:
        return done + [_with_crash(node, again) if node.failed else node for node in again.nodes]


def _after(node: NodeResult, crash: EngineCrashError) -> bool:
    """Whether the node ended after the engine was lost (or cannot be told apart)."""
    if not node.failed:
        return False
    return node.completed_at is None or crash.at is None or node.completed_at >= crash.at


def _with_crash(node: NodeResult, crash: EngineCrashError) -> NodeResult:
    return dataclasses.replace(node, status="error", message=str(crash))
