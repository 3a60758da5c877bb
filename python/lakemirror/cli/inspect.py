"""What `lakemirror inspect` and `lakemirror doctor` compute and print, from the Delta logs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from lakemirror.delta import (
    DEFAULT_READERS,
    PROFILES,
    Commit,
    ReaderProfile,
    TableLog,
    Verdict,
    deletion_vector_blockers,
    judge,
    read_log,
)
from lakemirror.delta.features import TABLE_FEATURES_WRITER_VERSION, Protocol
from lakemirror.delta.log import ISOLATION_LEVEL, UNSET_ISOLATION_LEVEL
from lakemirror.errors import ConfigError
from lakemirror.staging import Warehouse
from lakemirror.staging.warehouse_tables import find_tables, select_table
from lakemirror.storage.location import Location
from lakemirror.storage.warehouse import warehouse_location

CHANGE_DATA_FEED = "delta.enableChangeDataFeed"


@dataclass(frozen=True)
class TableReaders:
    """One table, the verdict of every profile asked about, and (for a mirrored table) the
    profiles that keep a new mirrored table copy-on-write, without deletion vectors."""

    log: TableLog
    verdicts: tuple[Verdict, ...]
    copy_on_write_because: tuple[str, ...] = ()

    @property
    def unreadable(self) -> bool:
        return any(verdict.cannot_read for verdict in self.verdicts)

    @property
    def deletion_vectors(self) -> bool:
        return "deletionVectors" in self.log.protocol.features_to_read()

    @property
    def change_data_feed(self) -> bool:
        return self.log.properties.get(CHANGE_DATA_FEED, "").lower() == "true"

    def reads_change_feed(self, verdict: Verdict) -> bool:
        """Whether the verdict's profile reads this table's change data feed."""
        return (self.change_data_feed and not verdict.cannot_read
                and bool(PROFILES[verdict.profile].change_feed))


def table_logs(warehouse: Location, table: str | None = None, *,
               history: int = 0) -> list[TableLog]:
    """The logs of one table (by name) or of every table in the warehouse."""
    layout = Warehouse(warehouse_location(warehouse))
    if not layout.storage.is_folder(""):
        raise ConfigError(f"warehouse folder {warehouse} does not exist",
                          hint="pass --warehouse or set LAKEMIRROR_WAREHOUSE")
    tables = find_tables(layout)
    chosen = [select_table(tables, table)] if table else tables
    return [read_log(chosen_table, history=history) for chosen_table in chosen]


def doctor(warehouse: Location, profiles: Sequence[ReaderProfile]) -> list[TableReaders]:
    blockers = deletion_vector_blockers(profiles)
    return [TableReaders(log, tuple(judge(profile, log.protocol) for profile in profiles),
                         blockers if log.table.kind == "mirrored" else ())
            for log in table_logs(warehouse)]


def inspect_json(logs: Sequence[TableLog]) -> str:
    return json.dumps([_log_json(log) for log in logs], indent=2, default=str)


def inspect_text(logs: Sequence[TableLog]) -> str:
    if not logs:
        return "no Delta tables in the warehouse yet"
    lines: list[str] = []
    for kind, group in groupby(logs, key=lambda log: log.table.kind):
        lines += [f"== {kind} tables =="] + [line for log in group for line in _log_text(log)]
        lines.append("")
    return "\n".join(lines).rstrip()


def doctor_json(results: Sequence[TableReaders]) -> str:
    return json.dumps([{
        "table": result.log.table.name, "kind": result.log.table.kind,
        "min_reader_version": result.log.protocol.min_reader_version,
        "min_writer_version": result.log.protocol.min_writer_version,
        "deletion_vectors": result.deletion_vectors,
        "change_data_feed": result.change_data_feed,
        **({"copy_on_write_because": list(result.copy_on_write_because)}
           if result.log.table.kind == "mirrored" else {}),
        "readers": [{"profile": verdict.profile,
                     "description": PROFILES[verdict.profile].description,
                     "can_read": not verdict.cannot_read,
                     "can_write": not verdict.cannot_write,
                     "cannot_read": list(verdict.cannot_read),
                     "cannot_write": list(verdict.cannot_write),
                     "reads_change_feed": result.reads_change_feed(verdict)}
                    for verdict in result.verdicts],
    } for result in results], indent=2)


def doctor_text(results: Sequence[TableReaders]) -> str:
    if not results:
        return "no Delta tables in the warehouse yet"
    width = max(len(verdict.profile) for verdict in results[0].verdicts)
    profiles = [verdict.profile for verdict in results[0].verdicts]
    default = " (the default set)" if tuple(profiles) == DEFAULT_READERS else ""
    lines = [f"readers: {', '.join(profiles)}{default}"]
    lines += [f"  {name:<{width}}  {PROFILES[name].description}" for name in profiles]
    blockers = next((result.copy_on_write_because for result in results
                     if result.log.table.kind == "mirrored"), None)
    if blockers is not None:
        lines.append(_new_mirrored_tables_text(blockers))
    for result in results:
        protocol = result.log.protocol
        vectors = ", deletion vectors" if result.deletion_vectors else ""
        lines.append(f"{result.log.table.name} ({result.log.table.kind}, protocol "
                     f"{protocol.min_reader_version}/{protocol.min_writer_version}{vectors})")
        for verdict in result.verdicts:
            lines.append(f"  {verdict.profile:<{width}}  {_verdict_text(verdict)}")
        if result.change_data_feed:
            lines.append(_change_feed_text(result))
    unreadable = sum(result.unreadable for result in results)
    lines.append(f"{unreadable} of {len(results)} tables unreadable for a named reader")
    if blockers:
        lines += _deletion_vector_advice(profiles, blockers)
    return "\n".join(lines)


def _change_feed_text(result: TableReaders) -> str:
    readers = [verdict.profile for verdict in result.verdicts
               if result.reads_change_feed(verdict)]
    others = [verdict.profile for verdict in result.verdicts if verdict.profile not in readers]
    return (f"  change data feed on: read by {', '.join(readers) or 'none of these'}"
            + (f"; not by {', '.join(others)}" if others else ""))


def _deletion_vector_advice(profiles: Sequence[str], blockers: Sequence[str]) -> list[str]:
    """How to keep new mirrored tables free of deletion vectors for `blockers`, readers of
    the set `profiles` that cannot read them, as lines to paste; and what a table that has
    them already can do."""
    return [
        f"to keep new mirrored tables copy-on-write for {', '.join(blockers)}, give runs this "
        "reader set in dbt_project.yml:",
        "  vars:",
        f"    lakemirror_readers: [{', '.join(profiles)}]",
        "  (or LAKEMIRROR_READERS=" + ",".join(profiles) + " in the environment of "
        "`lakemirror run`; for one model: +tblproperties: {delta.enableDeletionVectors: false})",
        "a table that has deletion vectors keeps them until it is rebuilt (--full-refresh) or "
        "the feature is dropped (lakemirror.drop_feature, on Spark); delta-rs's SQL engine reads "
        "it meanwhile: lakemirror.read_table(warehouse, 'schema.table')",
    ]


def _new_mirrored_tables_text(blockers: Sequence[str]) -> str:
    if not blockers:
        return "new mirrored tables: deletion vectors (every reader above reads them)"
    return (f"new mirrored tables: copy-on-write, no deletion vectors: {', '.join(blockers)} "
            f"cannot read them")


def profiles_json(profiles: Sequence[ReaderProfile]) -> str:
    return json.dumps([{
        "name": profile.name, "description": profile.description,
        "max_reader_version": profile.max_reader_version,
        "max_writer_version": profile.max_writer_version,
        "reads": sorted(profile.readable), "writes": sorted(profile.writable),
        "change_feed": profile.change_feed or None,
        "source": profile.source,
    } for profile in profiles], indent=2)


def profiles_text(profiles: Sequence[ReaderProfile]) -> str:
    width = max(len(profile.name) for profile in profiles)
    lines = [f"{'profile':<{width}}  max  description"]
    lines += [f"{profile.name:<{width}}  {profile.max_reader_version}/"
              f"{profile.max_writer_version}  {profile.description}" for profile in profiles]
    lines.append(f"default set: {','.join(DEFAULT_READERS)}")
    lines.append("use: lakemirror doctor --warehouse DIR [--readers delta-2.2,dbr-12.2,delta-rs]")
    return "\n".join(lines)


def _log_json(log: TableLog) -> dict[str, Any]:
    return {
        "table": log.table.name, "kind": log.table.kind, "path": str(log.table.path),
        "min_reader_version": log.protocol.min_reader_version,
        "min_writer_version": log.protocol.min_writer_version,
        "reader_features": sorted(log.protocol.features_to_read()),
        "writer_features": sorted(log.protocol.features_to_write()),
        "isolation_level": log.isolation_level,
        "properties": log.properties,
        "history": [{"version": commit.version,
                     "time": commit.time.isoformat() if commit.time else None,
                     "operation": commit.operation, "metrics": commit.metrics}
                    for commit in log.history],
    }


def _log_text(log: TableLog) -> list[str]:
    protocol = log.protocol
    isolation = log.isolation_level or UNSET_ISOLATION_LEVEL
    properties = [f"{key}={value}" for key, value in sorted(log.properties.items())
                  if key != ISOLATION_LEVEL]
    lines = [
        f"{log.table.name}  {log.table.path}",
        f"  protocol    reader {protocol.min_reader_version}, writer "
        f"{protocol.min_writer_version}",
        f"  features    {_features_text(protocol)}",
        f"  isolation   {isolation}",
        f"  properties  {', '.join(properties) or '-'}",
    ]
    lines += [f"  {'history' if index == 0 else '':<10}  {_commit_text(commit)}"
              for index, commit in enumerate(log.history)]
    return lines


def _commit_text(commit: Commit) -> str:
    time = commit.time.strftime("%Y-%m-%d %H:%M:%S") if commit.time else "?"
    rows = [f"{key}={value}" for key, value in commit.metrics.items()
            if "row" in key.lower() and value]
    return f"v{commit.version}  {time}  {commit.operation}  {' '.join(rows)}".rstrip()


def _verdict_text(verdict: Verdict) -> str:
    if not verdict.cannot_read and not verdict.cannot_write:
        return "ok"
    parts = [f"cannot {action}: {', '.join(reasons)}" for action, reasons in
             (("read", verdict.cannot_read), ("write", verdict.cannot_write)) if reasons]
    return "; ".join(parts)


def _features_text(protocol: Protocol) -> str:
    """What clients must support to read and write; a legacy protocol version only implies
    features (writer 2: appendOnly, invariants), which says nothing of their being in use."""
    text = (f"read: {_names(protocol.features_to_read())}; "
            f"write: {_names(protocol.features_to_write())}")
    if protocol.min_writer_version >= TABLE_FEATURES_WRITER_VERSION:
        return text
    return (f"{text} (what protocol {protocol.min_reader_version}/"
            f"{protocol.min_writer_version} asks clients to support; not settings in use)")


def _names(features: frozenset[str]) -> str:
    return ", ".join(sorted(features)) or "-"
