"""`lakemirror bench` output: a table for people, JSON for machines."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from lakemirror.bench.memory_limit import MECHANISM, POLL_SECONDS
from lakemirror.bench.runner import BEST_DELTARS, BenchResult

RATIOS = tuple((name, other) for name in ("lakemirror", "lakemirror-warm")
               for other in (BEST_DELTARS, "floor"))


def bench_document(result: BenchResult, extra: dict[str, Any]) -> dict[str, Any]:
    """The report as `--json` prints it, before its failures are added."""
    spec = {field.name: getattr(result.spec, field.name) for field in fields(result.spec)}
    spec["op_mix"] = dict(result.spec.op_mix)
    return {
        "spec": spec,
        "change_rows": result.change_rows,
        "contenders": [asdict(contender) for contender in result.contenders],
        "best_deltars": result.best_deltars(),
        "ratios": {f"{name}/{other}": result.ratio(name, other) for name, other in RATIOS},
        "memory_limit_gb": result.memory_limit_gb,
        "memory_limit_mechanism": MECHANISM if result.memory_limit_gb is not None else None,
        **extra,
    }


def bench_text(result: BenchResult) -> str:
    spec = result.spec
    lines = [f"{spec.tables} table(s) x {spec.table_rows:,} rows, {spec.files} files x "
             f"{spec.changes_per_file:,} changes; {result.change_rows:,} rows applied "
             f"(seed {spec.seed})",
             "",
             f"{'contender':<17}{'seconds':>9}{'rows/s':>12}{'peak RSS MB':>13}  result"]
    for contender in result.contenders:
        seconds = f"{contender.seconds:.2f}" if contender.seconds is not None else "-"
        rate = (f"{contender.rows_per_second:,.0f}"
                if contender.rows_per_second is not None else "-")
        rss = f"{contender.peak_rss_mb:,.0f}" if contender.peak_rss_mb is not None else "-"
        lines.append(f"{contender.name:<17}{seconds:>9}{rate:>12}{rss:>13}  {contender.message}")
    for contender in result.contenders:
        if contender.phases:
            lines.append(f"{contender.name} phases (s): " + ", ".join(
                f"{phase} {seconds:.2f}" for phase, seconds in contender.phases.items()))
    lines.append("")
    if result.memory_limit_gb is not None:
        lines.append(f"memory limit: {result.memory_limit_gb:g} GB per contender ({MECHANISM}: "
                     f"its process tree's RSS summed every {POLL_SECONDS * 1000:.0f} ms, the "
                     "tree killed above it)")
    lines.append(f"{BEST_DELTARS}: {result.best_deltars() or '-'}")
    for name, other in RATIOS:
        ratio = result.ratio(name, other)
        lines.append(f"{name}/{other} time: " + (f"{ratio:.2f}" if ratio else "-"))
    return "\n".join(lines)
