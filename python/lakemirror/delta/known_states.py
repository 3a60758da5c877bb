"""Delta tables' properties and protocol as a run last read them (after a build, with the row
count), handed to the next dbt build while no commit came since: the settings hook
(macros/delta/apply_delta_settings.sql) then compares the model's config with them instead of
reading the table's _delta_log again, a statement before every MERGE. The hook still computes
the config's settings every time, so a changed config is applied; any commit after the one read
(another writer's ALTER, a maintenance job, a recreated table) makes the hook read the table as
before.

A service keeps the states it read; a run also saves them in the warehouse (`STATES_KEY`, under
the control lock, merged with other runs'), so the next process's first build has them too. A
saved state is only ever a hint: it is handed on only while the commit it was read at is still
the table's last, byte for byte, and a file that does not read back is no state at all."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lakemirror.storage.location import Location
from lakemirror.storage.warehouse_door import WarehouseStorage

if TYPE_CHECKING:
    from deltalake import DeltaTable

STATES_VAR = "lakemirror_delta_states"  # read by macros/delta/read_delta_state.sql
STATES_KEY = "_lakemirror/control/delta_states.json"  # the states a warehouse's runs saved


@dataclass(frozen=True)
class _Known:
    version: int
    commit_digest: str  # of the version's commit file: a recreated table's differs
    state: dict[str, Any]  # read_delta_state's shape, protocol as the log's action


@dataclass
class KnownStates:
    """The states one service read or loaded, by the table's key in its warehouse: its own,
    never another service's."""

    _known: dict[str, _Known] = field(default_factory=dict)

    def remember(self, storage: WarehouseStorage, key: str, table: DeltaTable) -> None:
        """Keep the state of `table` (at `key` in the warehouse `storage`) at its loaded
        version."""
        version = table.version()
        try:
            digest = _commit_digest(storage, key, version)
        except Exception:  # not remembered: the next hook reads the table
            digest = None
        if digest is None:
            self._known.pop(key, None)
            return
        protocol = table.protocol()
        self._known[key] = _Known(version, digest, {
            "configuration": dict(table.metadata().configuration),
            "protocol": {"minReaderVersion": protocol.min_reader_version,
                         "minWriterVersion": protocol.min_writer_version,
                         "readerFeatures": list(protocol.reader_features or []),
                         "writerFeatures": list(protocol.writer_features or [])}})

    def current(self, root: Location, storage: WarehouseStorage) -> dict[str, dict[str, Any]]:
        """Location (as dbt names it) → state of the warehouse's tables still at the version
        remembered (no later commit, the same commit file); `root` is the warehouse's."""
        return {str(root / key): known.state for key, known in sorted(self._known.items())
                if _still_at(storage, key, known)}

    def load(self, storage: WarehouseStorage) -> None:
        """Add the states the warehouse's runs saved for tables this service has not read."""
        self._known = {**_saved(storage), **self._known}

    def save(self, storage: WarehouseStorage) -> None:
        """Save this service's states in the warehouse, over the saved ones of the same tables
        (call it under the control lock: other runs' tables are kept); no write when they
        are what is saved already (an idle run's)."""
        saved = _saved(storage)
        merged = {**saved, **self._known}
        if merged == saved:
            return
        storage.write_text(STATES_KEY, json.dumps(
            {key: asdict(known) for key, known in sorted(merged.items())}, sort_keys=True))


def _saved(storage: WarehouseStorage) -> dict[str, _Known]:
    """The saved states that read back as states; none when the file is missing or damaged."""
    try:
        document = json.loads(storage.read_text(STATES_KEY) or "{}")
        return {key: _Known(**entry) for key, entry in document.items()
                if isinstance(key, str) and _is_entry(entry)}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _is_entry(entry: Any) -> bool:
    return (isinstance(entry, dict) and set(entry) == {"version", "commit_digest", "state"}
            and isinstance(entry["version"], int) and isinstance(entry["commit_digest"], str)
            and isinstance(entry["state"], dict)
            and isinstance(entry["state"].get("configuration"), dict)
            and isinstance(entry["state"].get("protocol"), dict))


def _still_at(storage: WarehouseStorage, key: str, known: _Known) -> bool:
    """Whether the table has no commit after the remembered one, which is still the same
    file; when that cannot be told (a file going away meanwhile), the hook reads."""
    try:
        return (not storage.exists(_commit_key(key, known.version + 1))
                and _commit_digest(storage, key, known.version) == known.commit_digest)
    except Exception:  # the hook then reads the table, which is always correct
        return False


def _commit_digest(storage: WarehouseStorage, key: str, version: int) -> str | None:
    commit = _commit_key(key, version)
    if not storage.exists(commit):
        return None
    return hashlib.sha256(storage.read_bytes(commit)).hexdigest()


def _commit_key(key: str, version: int) -> str:
    return f"{key}/_delta_log/{version:020d}.json"
