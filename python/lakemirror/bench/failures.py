"""What makes `lakemirror bench` fail (exit code 1), read from its JSON document, so the exit
code says what the document says: a contender of lakemirror's that is not verified; another
contender that is not verified other than by running out of the memory limit it was given
(that is the figure `--memory-limit` asks for); and a figure that failed (its `error`) or
whose result is not verified. A contender skipped for a missing engine, and a figure that
could not be measured here (`missing`), are reported, not failed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

LAKEMIRROR_CONTENDERS = ("lakemirror", "lakemirror-warm", "spark")
# The fields a figure's result turns false when what it measured is wrong.
CHECKS = ("verified", "rebuild_verified", "complete")
REPORT_FIELDS = ("spec", "change_rows", "contenders", "best_deltars", "ratios",
                 "memory_limit_gb", "memory_limit_mechanism")


def bench_failures(document: Mapping[str, Any]) -> list[str]:
    """One line per failure: the contender or figure, then what went wrong."""
    failures = [f"{contender['name']}: {contender['message']}"
                for contender in document["contenders"] if _failed(contender)]
    for figure, value in document.items():
        if figure not in REPORT_FIELDS:
            failures += [f"{figure}: {problem}" for problem in _problems(value)]
    return failures


def _failed(contender: Mapping[str, Any]) -> bool:
    if contender["verified"] is not False:  # verified, or skipped (None)
        return False
    return contender["name"] in LAKEMIRROR_CONTENDERS or not contender["out_of_memory"]


def _problems(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        if value.get("error"):
            yield str(value["error"])
        for check in CHECKS:
            if value.get(check) is False:
                yield str(value.get("message") or f"{check}: false")
        for item in value.values():
            if isinstance(item, (Mapping, list, tuple)):
                yield from _problems(item)
    elif isinstance(value, (list, tuple)):  # a figure's dataclasses.asdict keeps tuples
        for item in value:
            yield from _problems(item)
