"""The outcome of one dbt node: what a run reports, and what an engine crash carries (so
`errors` needs nothing of the run)."""

from __future__ import annotations

from dataclasses import dataclass

# dbt's statuses of a node that did not do its work (skipped: for a failure upstream).
FAILED_STATUSES = frozenset({"error", "fail", "skipped", "runtime error"})


def node_kind(unique_id: str) -> str:
    """The resource type of a dbt unique id (`model` of `model.project.name`)."""
    return unique_id.split(".", 1)[0]


def node_name(unique_id: str) -> str:
    """The node's name in a dbt unique id: `name` of `model.project.name` (and of a versioned
    `model.project.name.v2`, or a test's `test.project.name.hash`); the last part of a
    shorter id (`operation.name`)."""
    parts = unique_id.split(".")
    return parts[2] if len(parts) > 2 else parts[-1]


def is_model_of(unique_id: str, models: tuple[str, ...] | frozenset[str]) -> bool:
    """Whether the unique id is that of one of the named models."""
    return node_kind(unique_id) == "model" and node_name(unique_id) in models


@dataclass(frozen=True)
class NodeResult:
    """Outcome of one dbt node (model, seed, test)."""

    unique_id: str
    status: str
    message: str | None
    depends_on: tuple[str, ...] = ()
    completed_at: float | None = None  # seconds since the epoch

    @property
    def kind(self) -> str:
        return node_kind(self.unique_id)

    @property
    def name(self) -> str:
        return node_name(self.unique_id)

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES
