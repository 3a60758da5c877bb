"""Delta tables' properties and protocol as a service last read them (after a build, with the
row count), handed to its next dbt build (warm or cold) while no commit came since: the
settings hook (macros/delta/apply_delta_settings.sql) then compares the model's config with
them instead of reading the table's _delta_log again, a statement before every MERGE. The hook still computes the config's settings every time, so a
changed config is applied; any commit after the one read (another writer's ALTER, a
maintenance job, a recreated table) makes the hook read the table as before."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakemirror.storage.location import Location
from lakemirror.storage.warehouse import warehouse_storage

if TYPE_CHECKING:
    from deltalake import DeltaTable

STATES_VAR = "lakemirror_delta_states"  # read by macros/delta/read_delta_state.sql


@dataclass(frozen=True)
class _Known:
    location: Location
    version: int
    commit_digest: str  # of the version's commit file: a recreated table's differs
    state: dict[str, Any]  # read_delta_state's shape, protocol as the log's action


@dataclass
class KnownStates:
    """The states one service read, by location: its own, never another service's."""

    _known: dict[str, _Known] = field(default_factory=dict)

    def remember(self, location: Location, table: DeltaTable) -> None:
        """Keep the state of `table` (loaded from `location`) at its loaded version."""
        version = table.version()
        try:
            digest = _commit_digest(location, version)
        except Exception:  # not remembered: the next hook reads the table
            digest = None
        if digest is None:
            self._known.pop(str(location), None)
            return
        protocol = table.protocol()
        self._known[str(location)] = _Known(location, version, digest, {
            "configuration": dict(table.metadata().configuration),
            "protocol": {"minReaderVersion": protocol.min_reader_version,
                         "minWriterVersion": protocol.min_writer_version,
                         "readerFeatures": list(protocol.reader_features or []),
                         "writerFeatures": list(protocol.writer_features or [])}})

    def current(self, under: Location) -> dict[str, dict[str, Any]]:
        """Location → state of the tables below `under` (a warehouse's root) still at the
        version remembered (no later commit, the same commit file)."""
        prefix = str(under).rstrip("/") + "/"
        return {key: known.state for key, known in sorted(self._known.items())
                if key.startswith(prefix) and _still_at(known)}


def _still_at(known: _Known) -> bool:
    """Whether the table has no commit after the remembered one, which is still the same
    file; when that cannot be told (a file going away meanwhile), the hook reads."""
    try:
        return (not warehouse_storage(known.location).exists(_commit_key(known.version + 1))
                and _commit_digest(known.location, known.version) == known.commit_digest)
    except Exception:  # the hook then reads the table, which is always correct
        return False


def _commit_digest(location: Location, version: int) -> str | None:
    storage = warehouse_storage(location)
    key = _commit_key(version)
    if not storage.exists(key):
        return None
    return hashlib.sha256(storage.read_bytes(key)).hexdigest()


def _commit_key(version: int) -> str:
    return f"_delta_log/{version:020d}.json"
