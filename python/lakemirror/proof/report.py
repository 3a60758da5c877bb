"""`lakemirror verify`'s answer: a line per table for people, one JSON document for machines."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from lakemirror.proof.compare import Comparison, Sample
from lakemirror.proof.verify import TableProof


def to_json(proofs: Sequence[TableProof]) -> str:
    """One document: `ok` (every table matches) and each table's proof. A value JSON has no
    literal for (NaN, infinities, decimals, times, bytes) is its text."""
    tables = [{"name": proof.name, **asdict(proof)} for proof in proofs]
    return json.dumps(_finite({"ok": all(proof.status == "ok" for proof in proofs),
                               "tables": tables}),
                      indent=2, default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    """`value` with every float that is not finite as its text ('nan', 'inf', '-inf')."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {name: _finite(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def to_text(proofs: Sequence[TableProof]) -> str:
    lines: list[str] = []
    for proof in proofs:
        lines.extend(_table_lines(proof))
    if not proofs:
        lines.append("no mirrored tables in this warehouse yet")
    return "\n".join(lines)


def _table_lines(proof: TableProof) -> list[str]:
    if proof.status == "failed":
        return [f"{_shown(proof.name)}: FAILED, could not verify: {proof.error}"]
    lines = [f"{_shown(proof.name)}: {_headline(proof)}"]
    if proof.missing_columns:
        lines.append(f"  the mirror lacks staged columns, compared as NULL: "
                     f"{', '.join(map(_shown, proof.missing_columns))}")
    if proof.mirror is not None:
        lines.extend(_samples(proof.mirror))
    if proof.history is not None:
        lines.append(f"  history: {_summary(proof.history, 'versions')}")
        lines.extend(_samples(proof.history))
    if proof.source is not None:
        lines.append(f"  source count {proof.source.source_rows} at file "
                     f"{proof.source.sequence}: {proof.source.verdict}")
    lines.extend(f"  note: {note}" for note in proof.notes)
    return lines


def _headline(proof: TableProof) -> str:
    assert proof.mirror is not None
    folded = (f"; changes up to {proof.compacted_through} were proved when compaction folded "
              "them" if proof.compacted_through else "")
    return (f"{'ok' if proof.status == 'ok' else 'DIFFERS'}: "
            f"{_summary(proof.mirror, 'rows')}, through position {proof.applied_through}"
            f"{folded}")


def _summary(comparison: Comparison, what: str) -> str:
    if comparison.ok:
        return f"{comparison.actual_rows} {what} match their staged changes"
    return (f"{comparison.missing} missing, {comparison.extra} extra, {comparison.changed} "
            f"changed of {comparison.expected_rows} expected {what} "
            f"({comparison.actual_rows} in the table)")


def _samples(comparison: Comparison) -> list[str]:
    return [f"    {sample.kind:<8} {_key(sample)}{_columns(sample)}"
            for sample in comparison.samples]


def _key(sample: Sample) -> str:
    key = ", ".join(f"{_shown(name)}={_value(value)}" for name, value in sample.key.items())
    key = key or "(no keys)"
    return f"{key} at position {sample.position}"


def _columns(sample: Sample) -> str:
    return "".join(f"; {_shown(name)}: expected {_value(values['expected'])}, "
                   f"found {_value(values['actual'])}"
                   for name, values in list(sample.columns.items())[:3])


def _value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _shown(name: str) -> str:
    """A name from the landing zone as printed: itself, or quoted with escapes when it holds
    a character a terminal would act on."""
    return name if name.isprintable() else repr(name)
