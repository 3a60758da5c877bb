"""Refuse to read around a damaged Delta log: the newest commit of every table lakemirror owns
must be whole. Delta writes a commit file once and never changes it, so a commit that is empty,
cut off or not JSON was damaged afterwards (a torn copy, a full disk, an operator), and every
engine would read it differently: delta-rs fails, Sail may skip the broken line and silently
lose the change. Only the newest commit is checked, each run: older ones were read whole by the
runs that followed them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lakemirror.errors import CorruptTableError
from lakemirror.storage.warehouse_door import WarehouseStorage

COMMIT = re.compile(r"[0-9]{20}\.json")
ACTIONS = frozenset({"commitInfo", "protocol", "metaData", "add", "remove", "txn", "cdc",
                     "domainMetadata", "checkpointMetadata", "sidecar"})
# Counts of file actions some writers record in commitInfo.operationMetrics: a commit cut off
# at a line boundary still parses, but then holds fewer actions than it says it wrote.
_ADDED_FILES = ("num_added_files", "numTargetFilesAdded", "numAddedFiles")
_REMOVED_FILES = ("num_removed_files", "numTargetFilesRemoved", "numRemovedFiles")


def check_newest_commit(storage: WarehouseStorage, table_key: str, *, table: str,
                        recovery: str) -> None:
    """Raise CorruptTableError when the newest commit of the Delta table at `table_key` of the
    warehouse's `storage` is damaged; a folder without a Delta log has nothing to check.
    `recovery` is the fix."""
    log = f"{table_key}/_delta_log"
    try:
        names = [name for name in storage.files(log) if COMMIT.fullmatch(name)]
    except OSError as error:
        raise CorruptTableError(f"cannot list the Delta log {storage.location(log)}: {error}",
                                table=table, file=storage.location(log), hint=recovery
                                ) from error
    if not names:
        return
    newest = f"{log}/{max(names)}"
    try:
        text = storage.read_bytes(newest).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CorruptTableError(f"cannot read the newest commit: {error}", table=table,
                                file=storage.location(newest), hint=recovery) from error
    problem = _problem(text)
    if problem:
        raise CorruptTableError(
            f"the newest commit of the Delta table is damaged ({problem}); lakemirror does not "
            "read around it, since a reader that skips the damage loses changes silently",
            table=table, file=storage.location(newest), hint=recovery)


def _problem(text: str) -> str | None:
    """What is wrong with a commit file's text, or None when it is whole."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return "it is empty"
    actions: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            action = json.loads(line)
        except ValueError:
            return f"line {number} is not valid JSON: it was cut off or overwritten"
        if not isinstance(action, dict) or len(action) != 1 or not set(action) <= ACTIONS:
            return f"line {number} is not a Delta action"
        actions.append(action)
    return _missing_file_actions(actions)


def _missing_file_actions(actions: list[dict[str, Any]]) -> str | None:
    info = next((action["commitInfo"] for action in actions if "commitInfo" in action), None)
    metrics = info.get("operationMetrics") if isinstance(info, dict) else None
    if not isinstance(metrics, dict):
        return None
    for keys, kind in ((_ADDED_FILES, "add"), (_REMOVED_FILES, "remove")):
        declared = next((metrics[key] for key in keys if key in metrics), None)
        found = sum(1 for action in actions if kind in action)
        if declared is not None and str(declared).isdigit() and found < int(declared):
            return f"commitInfo records {declared} {kind} actions, the file holds {found}"
    return None
