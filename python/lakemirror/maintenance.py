"""Bounded history and storage: `lakemirror maintain`, and `run` on a schedule.

Per table, under its lock (so never during a run's ingest or MERGE of it):
1. staging compaction: applied changes are folded into a snapshot (`staging.compaction`);
   with a history model, only those the history has applied too, and only those the
   downstream models reading the mirror's changes and built within DOWNSTREAM_HOLD have
   read (`_consumed`);
2. mirrored-table compaction: small files are rewritten into larger ones (delta-rs
   `optimize.compact`, on every engine; the table's protocol and features are unchanged);
   a table with liquid clustering (config cluster_by), which delta-rs cannot write, is
   reclustered by the engine's OPTIMIZE instead, when the caller gives one (`optimize`);
3. vacuum of both tables: files no version younger than `delta.deletedFileRetentionDuration`
   (default 7 days) needs are deleted, so time travel within that window keeps working.
A step skipped on purpose says why: nothing to do yet, a table delta-rs cannot write (a writer
feature it does not support), a clustered table without an engine that has OPTIMIZE. A step
that fails leaves its table as it was, is reported as failed with its error, and the other
steps and tables go on. `run` maintains a table when its last maintenance is older
than LAKEMIRROR_MAINTENANCE_HOURS (default 24; 0: every run; `never`: only `maintain`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any, TypeVar

from lakemirror.codegen.history import HISTORY_SUFFIX, history_relation
from lakemirror.delta.access import delta_table, is_delta_table
from lakemirror.delta.bookkeeping import bookkeeping_commit
from lakemirror.delta.log import table_protocol
from lakemirror.delta.readers import DELTA_RS, judge
from lakemirror.monitor import applied_positions, downstream_positions, require_warehouse
from lakemirror.naming import qualified_name, split_qualified_name
from lakemirror.environment import DEFAULT_LEASE_SECONDS
from lakemirror.errors import ConfigError, StorageError
from lakemirror.proof.verify import mirror_comparison
from lakemirror.staging.compaction import Compaction, compact_staging, staged_keys
from lakemirror.staging.ingest import CONDITIONAL_KEY
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lifecycle import staged_tables
from lakemirror.staging.lock import DEFAULT_LOCK_TIMEOUT, control_lock, table_locks
from lakemirror.storage.location import Location

STAMPS_FILE = "_lakemirror/maintenance.json"  # table → its last maintenance time
# Compaction keeps the changes a downstream model built this recently has not read yet; an
# older model's next build is refused (a full refresh rebuilds it), so one left unbuilt does
# not keep staging growing.
DOWNSTREAM_HOLD = timedelta(days=7)


@dataclass(frozen=True)
class TableMaintenance:
    """What maintenance did to one table."""

    schema: str
    table: str
    staged_rows_folded: int = 0  # applied changes replaced by the snapshot
    snapshot_rows: int = 0
    mirrored_files_removed: int = 0  # small files compacted away
    files_vacuumed: int = 0
    optimized: bool = False  # a clustered table reclustered by the engine's OPTIMIZE
    skipped: tuple[str, ...] = ()  # steps not done on purpose, with why
    failed: tuple[str, ...] = ()  # steps that failed: the step and its error


class StepSkipped(Exception):
    """A maintenance step not done on purpose (the message says why): no failure."""


@dataclass(frozen=True)
class StepOutcome:
    """How a maintenance step ended: done (both empty), skipped on purpose or failed, and why."""

    skipped: str = ""
    failed: str = ""


# Runs OPTIMIZE on the Delta tables at these locations through an engine that can; raises
# StepSkipped when the engine has no OPTIMIZE.
Optimize = Callable[[Sequence[Location]], None]
Result = TypeVar("Result")
OPTIMIZE_STEP = "mirrored OPTIMIZE"
NO_ENGINE = ("the table has liquid clustering, which only the engine's OPTIMIZE reclusters: "
             "give `lakemirror maintain` the spark or connect target (--target)")


def maintain(warehouse: Location, tables: Sequence[str] = (), *,
             lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
             lease_seconds: float = DEFAULT_LEASE_SECONDS, optimize: Optimize | None = None,
             progress: Callable[[str], None] = lambda message: None) -> list[TableMaintenance]:
    """Maintain the named staged tables ('schema.table'), or all of them. A folder that is no
    warehouse, or a name it has no table of, is a ConfigError: nothing is maintained."""
    layout = Warehouse(warehouse)
    require_warehouse(layout)
    staged = [qualified_name(schema, table) for schema, table in staged_tables(layout)]
    unknown = sorted(set(tables) - set(staged))
    if unknown:
        raise ConfigError(f"the warehouse {layout.storage.location('')} has no table "
                          f"{', '.join(unknown)}",
                          hint="name its tables as schema.table: " + (", ".join(staged)
                                                                      or "it has none yet"))
    names = [name for name in staged if not tables or name in tables]
    with table_locks(layout.storage, names, timeout=lock_timeout, progress=progress,
                     lease_seconds=lease_seconds):
        return maintain_tables(layout, names, optimize=optimize, progress=progress)


def maintain_tables(layout: Warehouse, names: Sequence[str], *,
                    optimize: Optimize | None = None,
                    progress: Callable[[str], None] = lambda message: None
                    ) -> list[TableMaintenance]:
    """Maintain the named tables, whose locks the caller holds; the clustered ones are
    reclustered with `optimize` (all in one call, before their vacuum)."""
    applied = applied_positions(layout)
    downstream = downstream_positions(layout, datetime.now(timezone.utc) - DOWNSTREAM_HOLD)
    clustered = [name for name in names if _clustered(layout.mirrored_path(
        *split_qualified_name(name)))]
    reclustered = _recluster(layout, clustered, optimize, progress)
    results = []
    for name in names:
        progress(f"maintain {name}")
        results.append(_maintain_table(layout, name, _consumed(layout, applied, downstream, name),
                                       applied.get(name, 0), reclustered.get(name)))
    _stamp(layout, names, time.time())
    return results


def _clustered(mirrored: Location) -> bool:
    """Whether the table has liquid clustering (its protocol lists the writer feature)."""
    return is_delta_table(mirrored) and "clustering" in (
        delta_table(mirrored).protocol().writer_features or ())


def _recluster(layout: Warehouse, names: Sequence[str], optimize: Optimize | None,
               progress: Callable[[str], None]) -> dict[str, StepOutcome]:
    """OPTIMIZE the clustered tables `names` in one call; when it fails, one table at a time
    (OPTIMIZE is idempotent), to name the tables that fail."""
    if not names:
        return {}
    if optimize is None:
        return {name: StepOutcome(skipped=f"{OPTIMIZE_STEP}: {NO_ENGINE}") for name in names}
    progress(f"optimize {', '.join(names)}")
    paths = {name: layout.mirrored_path(*split_qualified_name(name)) for name in names}
    together = _optimize(optimize, list(paths.values()))
    if together.failed and len(names) > 1:
        return {name: _optimize(optimize, [path]) for name, path in paths.items()}
    return {name: together for name in names}


def _optimize(optimize: Optimize, locations: Sequence[Location]) -> StepOutcome:
    outcome: list[StepOutcome] = []
    _step(OPTIMIZE_STEP, partial(optimize, locations), outcome)
    return outcome[0] if outcome else StepOutcome()


def _step(step: str, action: Callable[[], Result], outcome: list[StepOutcome]) -> Result | None:
    """Run one step of a table's maintenance: its result, or None with why it was skipped or
    how it failed added to `outcome` (the table is left as it was; other steps go on)."""
    try:
        return action()
    except StepSkipped as reason:
        outcome.append(StepOutcome(skipped=f"{step}: {reason}"))
    except Exception as error:
        outcome.append(StepOutcome(failed=f"{step}: {type(error).__name__}: {error}"))
    return None


def _writable_by_delta_rs(table: Location) -> None:
    """Raise StepSkipped when the table has a writer feature delta-rs cannot write."""
    cannot = judge(DELTA_RS, table_protocol(table)).cannot_write
    if cannot:
        raise StepSkipped(f"delta-rs cannot write {', '.join(cannot)} (the engine's OPTIMIZE "
                          "and VACUUM can: run them on the spark target)")


def _consumed(layout: Warehouse, applied: dict[str, int], downstream: dict[str, int],
              name: str) -> int:
    """The position up to which every relation fed by the table's staging has applied its
    changes: the mirrored table's watermark, lowered to what its history table (while it
    exists) and the downstream models built within DOWNSTREAM_HOLD have read, so compaction
    never folds changes they have not read yet."""
    schema, table = split_qualified_name(name)
    watermark = min(applied.get(name, 0), downstream.get(name, math.inf))
    if not is_delta_table(layout.mirrored_path(schema, table + HISTORY_SUFFIX)):
        return int(watermark)
    return int(min(watermark, applied.get(history_relation(schema, table), 0)))


def due_tables(warehouse: Location, names: Sequence[str], *, hours: float | None) -> list[str]:
    """The tables whose last maintenance is older than `hours` (LAKEMIRROR_MAINTENANCE_HOURS;
    None: never). A table seen for the first time is stamped now: it has nothing to maintain
    yet."""
    if hours is None:
        return []
    layout, now = Warehouse(warehouse), time.time()
    stamps = _stamps(layout)
    new = [name for name in names if name not in stamps]
    if new and hours > 0:
        _stamp(layout, new, now)
    return [name for name in names
            if now - stamps.get(name, now if hours > 0 else 0.0) >= hours * 3600]


def _maintain_table(layout: Warehouse, name: str, watermark: int, mirror_watermark: int,
                    recluster: StepOutcome | None = None) -> TableMaintenance:
    """`recluster`: None for a table without clustering, else how its OPTIMIZE ended."""
    schema, table = split_qualified_name(name)
    staging, mirrored = layout.staging_path(schema, table), layout.mirrored_path(schema, table)
    outcome = [] if recluster is None else [recluster]
    folded = _step("staging compaction", partial(
        _compact_staging, layout, name, watermark, mirror_watermark), outcome) or Compaction(0, 0)
    removed = 0
    if recluster is None and is_delta_table(mirrored):
        metrics = _step("mirrored compaction", partial(_compact, mirrored), outcome) or {}
        removed = int(metrics.get("numFilesRemoved", 0)) - int(metrics.get("numFilesAdded", 0))
    vacuumed = 0
    for path in (staging, mirrored):
        if is_delta_table(path):
            vacuumed += _step(f"vacuum of {path.name}", partial(_vacuum, path), outcome) or 0
    return TableMaintenance(
        schema, table, folded.rows_before, folded.rows_after, max(removed, 0), vacuumed,
        recluster == StepOutcome(),
        tuple(step.skipped for step in outcome if step.skipped),
        tuple(step.failed for step in outcome if step.failed))


def _compact_staging(layout: Warehouse, name: str, watermark: int,
                     mirror_watermark: int) -> Compaction:
    schema, table = split_qualified_name(name)
    staging, mirrored = layout.staging_path(schema, table), layout.mirrored_path(schema, table)
    recorded = bookkeeping_commit(delta_table(staging))
    if CONDITIONAL_KEY not in recorded:
        raise StepSkipped("staged by an older lakemirror (the next staged file records what "
                          "it needs)")
    return compact_staging(staging, mirrored, watermark, keys=staged_keys(staging),
                           conditional_column=recorded[CONDITIONAL_KEY] or None, table=name,
                           prove=lambda: _prove_before_folding(
                               layout, name, watermark, mirror_watermark))


def _compact(mirrored: Location) -> dict[str, Any]:
    _writable_by_delta_rs(mirrored)
    return dict(delta_table(mirrored).optimize.compact())


def _vacuum(path: Location) -> int:
    _writable_by_delta_rs(path)
    return len(delta_table(path).vacuum(dry_run=False))


def _prove_before_folding(layout: Warehouse, name: str, watermark: int,
                          mirror_watermark: int) -> None:
    """Compaction replaces the changes that prove the mirror by the mirror's own rows: it goes
    ahead only when the mirror equals their replay (checked once compaction found the mirror
    at exactly them, when the mirror's recorded batches end there too)."""
    if watermark <= 0 or mirror_watermark != watermark:
        return
    comparison = mirror_comparison(layout, name, watermark)
    if not comparison.ok:
        raise StorageError(
            f"the mirror differs from its staged changes ({comparison.missing} missing, "
            f"{comparison.extra} extra, {comparison.changed} changed rows), so they were kept",
            table=name, hint=f"see `lakemirror verify {name}`; `lakemirror resync {name} "
                             "--snapshot ...` repairs it")


def _stamps(layout: Warehouse) -> dict[str, float]:
    try:
        text = layout.storage.read_text(STAMPS_FILE)
        stamps = {} if text is None else json.loads(text)
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in stamps.items()} if isinstance(stamps, dict) else {}


def _stamp(layout: Warehouse, names: Sequence[str], when: float) -> None:
    """Record when each table was maintained (atomically, under the control lock)."""
    with control_lock(layout.storage):
        stamps = _stamps(layout)
        stamps.update({name: when for name in names})
        layout.storage.write_text(STAMPS_FILE, json.dumps(stamps, indent=1, sort_keys=True))


def to_json(results: Sequence[TableMaintenance]) -> str:
    return json.dumps({"tables": [asdict(result) for result in results]}, indent=2)


def to_text(result: TableMaintenance) -> str:
    return (f"{result.schema}.{result.table}: {result.staged_rows_folded} applied changes "
            f"folded into {result.snapshot_rows} rows, {result.mirrored_files_removed} files "
            f"compacted away, {result.files_vacuumed} files vacuumed"
            + ("; reclustered by OPTIMIZE" if result.optimized else "")
            + "".join(f"; skipped {reason}" for reason in result.skipped)
            + "".join(f"; FAILED {failure}" for failure in result.failed))
