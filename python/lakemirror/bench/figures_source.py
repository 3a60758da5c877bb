"""The bench's committed figures: `docs/figures/`, the `lakemirror bench --json` documents as
printed, and its index `figures.yml`, which groups them in sets (one document per round) and
gives each set's command, day, machine and lakemirror version."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INDEX = "figures.yml"
Document = dict[str, Any]


@dataclass(frozen=True)
class FigureSet:
    name: str
    command: str
    measured: str
    machine: str
    version: str
    files: tuple[str, ...]
    documents: tuple[Document, ...]

    def provenance(self) -> str:
        rounds = f"{len(self.files)} rounds" if len(self.files) > 1 else "one round"
        return (f"`{self.name}`: {rounds} ({', '.join(f'`{name}`' for name in self.files)}), "
                f"measured {self.measured} on {self.machine}, lakemirror {self.version}")


def load_sets(folder: Path) -> dict[str, FigureSet]:
    """Every set of the index, its documents read from `folder`."""
    import yaml

    index = yaml.safe_load((folder / INDEX).read_text())
    sets = {}
    for name, entry in index["sets"].items():
        files = tuple(entry["files"])
        sets[name] = FigureSet(
            name, entry["command"], str(entry["measured"]), entry["machine"],
            str(entry["version"]), files,
            tuple(json.loads((folder / file).read_text()) for file in files))
    return sets


def contender(document: Document, name: str) -> Document:
    """One contender's result in a document."""
    return next(result for result in document["contenders"] if result["name"] == name)


def measured(document: Document, figure: str) -> Document | None:
    """A figure of a document, or None when it was off, failed or not measured."""
    value = document.get(figure)
    if not isinstance(value, dict) or "error" in value or "missing" in value:
        return None
    return value


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def seconds(value: float) -> str:
    return f"{value:,.2f} s"


def megabytes(value: float) -> str:
    return f"{value:,.0f} MB"


def times(value: float) -> str:
    return f"{value:.2f}×"


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A markdown table."""
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def commands(sets: Mapping[str, FigureSet], names: Iterable[str]) -> str:
    """Where a block's figures come from: each set's provenance, then its command."""
    chosen = [sets[name] for name in names]
    sources = "\n".join(f"- {figure_set.provenance()}" for figure_set in chosen)
    lines = "\n".join(figure_set.command for figure_set in chosen)
    return f"{sources}\n\n```bash\n{lines}\n```"
