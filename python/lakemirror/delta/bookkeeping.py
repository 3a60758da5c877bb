"""lakemirror's bookkeeping in a Delta table's commit metadata (`lakemirror.*` keys: the last
staged file, the keys, the incarnation, ...). Other writers commit to the same tables:
delta-rs's vacuum writes VACUUM START and END commits whenever it removes files, and a user may
OPTIMIZE a table or set a property. So the bookkeeping is the newest commit that carries it,
not the newest commit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deltalake import DeltaTable

PREFIX = "lakemirror."
RECENT = 20  # commits looked at before the whole history is read


def bookkeeping_commit(table: DeltaTable) -> dict[str, Any]:
    """The newest commit of `table` that carries lakemirror's keys; {} when none does. The
    newest commit is read alone first: usually lakemirror's own."""
    for limit in (1, RECENT, None):
        commits = table.history(limit=limit)
        for commit in commits:
            if any(str(key).startswith(PREFIX) for key in commit):
                return commit
        if limit is None or len(commits) < limit:
            break  # the whole history was read
    return {}


def bookkeeping_keys(table: DeltaTable) -> dict[str, str]:
    """The bookkeeping keys of `table`, for a commit that must carry them on."""
    return {key: str(value) for key, value in bookkeeping_commit(table).items()
            if key.startswith(PREFIX)}
