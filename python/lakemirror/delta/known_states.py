"""Delta tables' properties and protocol as this process last read them (after a build, with
the row count), handed to the next dbt invocation while no commit came since: the settings
hook (macros/delta/apply_delta_settings.sql) then compares the model's config with them
instead of reading the table's state again, a statement before every MERGE of a warm loop
(`lakemirror run --watch`). The hook still computes the config's settings every time, so a
changed config is applied; any commit after the one read (another writer's ALTER, a
maintenance job, a recreated table) makes the hook read the table as before."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakemirror.storage.location import Location
from lakemirror.storage.warehouse import warehouse_storage

if TYPE_CHECKING:
    from deltalake import DeltaTable

STATES_ENV = "LAKEMIRROR_DELTA_STATES"  # read by macros/delta/read_delta_state.sql
MAX_ENV_CHARS = 64 * 1024  # child processes inherit the variable: stay far below exec's limit


@dataclass(frozen=True)
class _Known:
    location: Location
    version: int
    commit_digest: str  # of the version's commit file: a recreated table's differs
    state: dict[str, Any]  # read_delta_state's shape, protocol as the log's action


_known: dict[str, _Known] = {}


def remember(location: Location, table: DeltaTable) -> None:
    """Keep the state of `table` (loaded from `location`) at its loaded version."""
    version = table.version()
    try:
        digest = _commit_digest(location, version)
    except Exception:  # not remembered: the next hook reads the table
        digest = None
    if digest is None:
        _known.pop(str(location), None)
        return
    protocol = table.protocol()
    _known[str(location)] = _Known(location, version, digest, {
        "configuration": dict(table.metadata().configuration),
        "protocol": {"minReaderVersion": protocol.min_reader_version,
                     "minWriterVersion": protocol.min_writer_version,
                     "readerFeatures": list(protocol.reader_features or []),
                     "writerFeatures": list(protocol.writer_features or [])}})


def states_env(locations: Iterable[Location]) -> dict[str, str]:
    """{STATES_ENV: JSON of location → state} for those of `locations` still at the version
    remembered (no later commit, the same commit file), as many as fit MAX_ENV_CHARS."""
    states: dict[str, dict[str, Any]] = {}
    size = 2
    for location in sorted(locations, key=str):
        known = _known.get(str(location))
        if known is None or not _still_at(known):
            continue
        entry = len(json.dumps({str(location): known.state})) - 1
        if size + entry > MAX_ENV_CHARS:
            break
        states[str(location)], size = known.state, size + entry
    return {STATES_ENV: json.dumps(states)}


def remembered(under: Location) -> list[Location]:
    """The remembered locations below `under` (a warehouse's root)."""
    prefix = str(under).rstrip("/") + "/"
    return [known.location for key, known in _known.items() if key.startswith(prefix)]


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
