"""The outcome of one dbt node: what a run reports, and what an engine crash carries (so
`errors` needs nothing of the run)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeResult:
    """Outcome of one dbt node (model, seed, test)."""

    unique_id: str
    status: str
    message: str | None
    depends_on: tuple[str, ...] = ()
    completed_at: float | None = None  # seconds since the epoch

    @property
    def failed(self) -> bool:
        return self.status in ("error", "fail", "skipped", "runtime error")
