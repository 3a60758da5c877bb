"""`lakemirror verify`: prove each mirrored table (and its history table) is exactly what its
staged changes imply.

Per table, under its lock (so no run applies changes meanwhile): the changes up to the
position the table's last applied batch recorded are replayed (`proof.replay`) and compared
with the table, every column of every row (`proof.compare`); a table that differs there is
compared again at any batch end a run claimed beyond it (a run that stopped between its MERGE
and its bookkeeping). Maintenance folds staged changes into the rows they made only after
proving the mirror equals their replay, and records how far it folded: the mirror is proved as
a whole, and the history versions that ended before that position, whose changes are gone, are
named as not provable instead of compared. A source row count, when given, is compared with
the replay at the file it was taken at, which tells the publisher's side from lakemirror's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from lakemirror.codegen.history import HISTORY_SUFFIX, history_relation
from lakemirror.codegen.quoting import datafusion_identifier as quoted
from lakemirror.delta.access import delta_table, is_delta_table
from lakemirror.delta.bookkeeping import bookkeeping_commit
from lakemirror.environment import DEFAULT_LEASE_SECONDS
from lakemirror.errors import ConfigError, LakemirrorError
from lakemirror.landing import POSITION
from lakemirror.monitor import applied_positions, require_warehouse, unrecorded_claims
from lakemirror.naming import qualified_name, split_qualified_name
from lakemirror.proof.compare import Comparison, Sides, compare
from lakemirror.proof.replay import (
    STAGED,
    ChangeLog,
    change_log,
    count_rows,
    replayed_rows,
    replayed_versions,
)
from lakemirror.proof.source_counts import SourceCheck, SourceCount, check_source
from lakemirror.staging.ingest import COMPACTED_KEY, SEQUENCE_KEY
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lifecycle import staged_tables
from lakemirror.staging.lock import DEFAULT_LOCK_TIMEOUT, table_locks
from lakemirror.storage.location import Location

MIRRORED, HISTORY = "mirrored", "history"  # names the tables are registered under
VERSION_COLUMNS = ("_lm_valid_to", "_lm_is_current", "_lm_is_deleted")
Status = Literal["ok", "differs", "failed"]


@dataclass(frozen=True)
class TableProof:
    """What verifying one table found."""

    schema: str
    table: str
    status: Status
    applied_through: int = 0  # position of the last change the mirror applied
    compacted_through: int = 0  # changes up to here were folded (proved then)
    mirror: Comparison | None = None
    history: Comparison | None = None
    source: SourceCheck | None = None
    missing_columns: tuple[str, ...] = ()  # staged columns the mirror lacks (read as NULL)
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def name(self) -> str:
        return qualified_name(self.schema, self.table)


@dataclass(frozen=True)
class _Tables:
    """The locations one table's proof reads."""

    staging: Location
    mirrored: Location
    history: Location
    log: ChangeLog
    compacted_through: int
    last_staged: int  # sequence number of the last staged file
    notes: list[str] = field(default_factory=list)


def verify(warehouse: Location, tables: Sequence[str] = (), *,
           source_counts: Mapping[str, SourceCount] | None = None,
           lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
           lease_seconds: float = DEFAULT_LEASE_SECONDS,
           progress: Callable[[str], None] = lambda message: None) -> list[TableProof]:
    """Verify the named staged tables ('schema.table'), or all of them."""
    layout = Warehouse(warehouse)
    require_warehouse(layout)
    known = [qualified_name(schema, table) for schema, table in staged_tables(layout)]
    unknown = [name for name in [*tables, *(source_counts or {})] if name not in known]
    if unknown:
        raise ConfigError(
            f"no mirrored table {', '.join(sorted(set(unknown)))} in this warehouse",
            hint=f"name one of: {', '.join(known) or '(none yet: run lakemirror first)'}")
    names = [name for name in known if not tables or name in tables]
    with table_locks(layout.storage, names, timeout=lock_timeout, progress=progress,
                     lease_seconds=lease_seconds):
        watermarks = _Watermarks(applied_positions(layout), unrecorded_claims(layout))
        proofs = []
        for name in names:
            progress(f"verify {name}")
            proofs.append(_verify_table(layout, name, watermarks,
                                        (source_counts or {}).get(name)))
        return proofs


@dataclass(frozen=True)
class _Watermarks:
    """How far each relation's recorded batches go, and the batch ends claimed beyond."""

    applied: Mapping[str, int]
    claims: Mapping[str, Sequence[int]]

    def proved(self, relation: str, compare_at: Callable[[int], Comparison],
               notes: list[str]) -> tuple[int, Comparison]:
        """The relation compared at its applied watermark; when it differs there, at a batch
        end a run claimed beyond it and stopped before recording, if it matches there (its
        MERGE committed; the next run records it)."""
        recorded = self.applied.get(relation, 0)
        found = compare_at(recorded)
        for claimed in () if found.ok else self.claims.get(relation, ()):
            again = compare_at(claimed)
            if again.ok:
                notes.append(f"{relation} holds the changes up to position {claimed}, whose "
                             "run stopped before recording them: the next run records them")
                return claimed, again
        return recorded, found


def _verify_table(layout: Warehouse, name: str, watermarks: _Watermarks,
                  source: SourceCount | None) -> TableProof:
    schema, table = split_qualified_name(name)
    try:
        tables = _tables(layout, schema, table)
        through, mirror = watermarks.proved(
            name, lambda position: _compare_mirror(tables, position), tables.notes)
        history = None if not is_delta_table(tables.history) else watermarks.proved(
            history_relation(schema, table), lambda position: _compare_history(tables, position),
            tables.notes)[1]
        checked = None if source is None else check_source(
            source, tables.staging, tables.log, tables.compacted_through,
            last_staged=tables.last_staged, mirror_ok=mirror.ok)
    except LakemirrorError as error:
        return TableProof(schema, table, "failed", error=str(error))
    except Exception as error:  # delta-rs and its SQL engine raise plain exceptions
        return TableProof(schema, table, "failed", error=f"{type(error).__name__}: {error}")
    differs = (not mirror.ok or (history is not None and not history.ok)
               or (checked is not None and not checked.ok))
    return TableProof(schema, table, "differs" if differs else "ok", through,
                      tables.compacted_through, mirror, history, checked,
                      _lacking(tables), tuple(dict.fromkeys(tables.notes)))


def mirror_comparison(layout: Warehouse, name: str, through: int) -> Comparison:
    """The mirrored table `name` against the replay of its staged changes up to `through`."""
    return _compare_mirror(_tables(layout, *split_qualified_name(name)), through)


def _tables(layout: Warehouse, schema: str, table: str) -> _Tables:
    staging = layout.staging_path(schema, table)
    recorded = bookkeeping_commit(delta_table(staging))
    return _Tables(staging, layout.mirrored_path(schema, table),
                   layout.mirrored_path(schema, table + HISTORY_SUFFIX), change_log(staging),
                   int(recorded.get(COMPACTED_KEY) or 0), int(recorded.get(SEQUENCE_KEY) or 0))


def _compare_mirror(tables: _Tables, through: int) -> Comparison:
    """The mirror against the replay of the changes up to `through`; staged columns it lacks
    are compared as NULL (a column staged by a file the mirror has not applied yet)."""
    expected = replayed_rows(tables.log, through)
    if not is_delta_table(tables.mirrored):
        tables.notes.append("the mirrored table does not exist (yet)")
        rows = count_rows({STAGED: tables.staging}, expected)
        return Comparison(rows, 0, rows, 0, 0)
    actual = _columns(tables.mirrored)
    _note_unverified(tables, actual, (POSITION, *tables.log.data_columns))
    sides = Sides({STAGED: tables.staging, MIRRORED: tables.mirrored}, expected,
                  _rows_of(MIRRORED, actual, tables.log.data_columns), POSITION,
                  tables.log.data_columns, tables.log.keys)
    return compare(sides)


def _lacking(tables: _Tables) -> tuple[str, ...]:
    """The staged columns the mirror lacks."""
    if not is_delta_table(tables.mirrored):
        return ()
    actual = _columns(tables.mirrored)
    return tuple(name for name in tables.log.data_columns if name not in actual)


def _columns(table: Location) -> list[str]:
    return [field.name for field in delta_table(table).schema().fields]


def _compare_history(tables: _Tables, through: int) -> Comparison:
    """The history table against the versions the changes up to `through` imply. Versions
    that ended at or before the compaction's position are not compared."""
    actual = _columns(tables.history)
    columns = (*tables.log.data_columns, *VERSION_COLUMNS)
    provable = ""
    if tables.compacted_through:
        provable = (f' where "_lm_valid_to" is null '
                    f'or "_lm_valid_to" > {int(tables.compacted_through)}')
        tables.notes.append(
            f"history versions that ended at or before position {tables.compacted_through} "
            "are not compared: staging compaction folded the changes that made them")
    sides = Sides({STAGED: tables.staging, HISTORY: tables.history},
                  replayed_versions(tables.log, through),
                  f"{_rows_of(HISTORY, actual, columns)}{provable}", "_lm_valid_from", columns,
                  tables.log.keys)
    return compare(sides)


def _rows_of(table: str, actual: Sequence[str], compared: Sequence[str]) -> str:
    """A query of the rows of the table registered as `table`, whose columns are `actual`,
    with each of the `compared` columns it lacks as NULL."""
    lacking = "".join(f", null as {quoted(name)}" for name in compared if name not in actual)
    return f"select *{lacking} from {table}"


def _note_unverified(tables: _Tables, actual: Sequence[str], data: Sequence[str]) -> None:
    """Name the mirror's columns no staged change holds (a model edited to add them)."""
    extra = [name for name in actual if name not in data]
    if extra:
        tables.notes.append(f"columns not compared (no staged change holds them): "
                            f"{', '.join(extra)}")
