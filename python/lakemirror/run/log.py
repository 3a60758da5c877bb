"""What a run says as it goes: progress lines, and warnings about the run as a whole."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Progress = Callable[[str], None]


def silent(message: str) -> None:
    """Progress that shows nothing."""


@dataclass
class RunLog:
    """A run's progress callback, and its warnings kept for the run's JSON."""

    progress: Progress = silent
    warnings: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        """A warning about the run as a whole: shown now, and in the run's JSON."""
        self.warnings.append(message)
        self.progress(f"warning: {message}")
