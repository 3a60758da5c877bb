"""performance.md's table of targets: each target's figure from the committed JSON, and whether
it is met, decided here from the numbers (never written by hand)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from lakemirror.bench.figures_source import (
    Document, FigureSet, contender, measured, median, megabytes, seconds, table, times)

GIGABYTE_MB = 1024  # the bench's MB are MiB (RSS / 2**20)


@dataclass(frozen=True)
class Target:
    figure: str
    result: str
    target: str
    met: bool | None  # None: a figure shown without a target

    def row(self) -> tuple[str, str, str, str]:
        verdict = "" if self.met is None else "met" if self.met else "missed"
        return self.figure, self.result, self.target, verdict


def _many_tables(sets: Mapping[str, FigureSet]) -> list[Target]:
    document = sets["many-tables"].documents[0]
    spec, tables = document["spec"], document["spec"]["tables"]
    mirror, deltars = contender(document, "lakemirror"), contender(document, "delta-rs")
    ratio = document["ratios"]["lakemirror/best delta-rs"]
    own = (mirror["seconds"] - deltars["seconds"]) / tables
    idle = document["idle_run"]
    runs = ", ".join(seconds(value) for value in idle["seconds"])
    return [
        Target(f"{tables} small tables ({spec['table_rows']:,} rows, {spec['files']} files of "
               f"{spec['changes_per_file']:,} changes each), one cold run, against per-table "
               "delta-rs", f"{seconds(mirror['seconds'])} against "
               f"{seconds(deltars['seconds'])}: {times(ratio)}", "≤ 3×", ratio <= 3),
        Target("lakemirror's own cost per changed table in that run",
               f"({seconds(mirror['seconds'])} − {seconds(deltars['seconds'])}) / {tables} = "
               f"{seconds(own)}", "≤ 0.1 s", own <= 0.1),
        Target(f"idle run over those {tables} tables, local disk, `--json` complete",
               f"{seconds(idle['median'])}, median of {len(idle['seconds'])} runs ({runs}); "
               f"{idle['message']}", "≤ 1.5 s", idle["median"] <= 1.5 and idle["complete"]),
    ]


def _freshness(document: Document) -> Target:
    fresh, copy = measured(document, "freshness"), measured(document, "freshness_copy_on_write")
    assert fresh is not None
    value = median(fresh["seconds"])
    cow = f"; copy-on-write {seconds(median(copy['seconds']))}" if copy else ""
    return Target(f"freshness, a {fresh['changes_per_file']:,}-change file into "
                  f"{fresh['table_rows']:,} rows, `run --watch`",
                  f"{seconds(value)}, median of {len(fresh['seconds'])} "
                  f"({seconds(min(fresh['seconds']))} to {seconds(max(fresh['seconds']))}){cow}",
                  "≤ 0.6 s", value <= 0.6)


def _standard(sets: Mapping[str, FigureSet]) -> list[Target]:
    document = sets["standard"].documents[0]
    cold, warm = contender(document, "lakemirror"), contender(document, "lakemirror-warm")
    best = contender(document, document["best_deltars"])
    ratios = document["ratios"]
    first, second = ratios["lakemirror/best delta-rs"], ratios["lakemirror-warm/best delta-rs"]
    found = [
        Target("imports before the first useful work (the standard size's cold run)",
               seconds(cold["phases"]["imports"]), "≤ 1.0 s", cold["phases"]["imports"] <= 1.0),
        Target(f"standard size, cold / warm, against {best['name']}",
               f"{seconds(cold['seconds'])} / {seconds(warm['seconds'])} against "
               f"{seconds(best['seconds'])}: {times(first)} / {times(second)}",
               "≤ 2.0× / ≤ 1.5×", first <= 2.0 and second <= 1.5),
        _freshness(document)]
    staging = measured(document, "staging")
    if staging:
        found.append(_staging_target("standard size", [staging]))
    spark = next((result for result in document["contenders"] if result["name"] == "spark"),
                 None)
    if spark:
        label = "spark target against the embedded engine, standard size"
        if spark["verified"]:
            ratio = spark["seconds"] / cold["seconds"]
            found.append(Target(label, f"{seconds(spark['seconds'])} against "
                                f"{seconds(cold['seconds'])}: {times(ratio)}", "≤ 3×", ratio <= 3))
        else:
            found.append(Target(label, f"not measured: {spark['message']}", "≤ 3×", None))
    return found


def _staging_target(size: str, figures: list[Document]) -> Target:
    ratios = [figure["ratio"] for figure in figures]
    rates = "; ".join(f"{figure['staging_rows_per_second'] / 1e6:.2f} M rows/s against "
                      f"{figure['floor_rows_per_second'] / 1e6:.2f} M: {times(figure['ratio'])}"
                      for figure in figures)
    return Target(f"staging rows/s against pyarrow reading and writing the same files, {size}",
                  f"{rates} the floor's time", f"within {figures[0]['target']}×",
                  median(ratios) <= figures[0]["target"])


def _scale_10(sets: Mapping[str, FigureSet]) -> list[Target]:
    documents = sets["scale-10"].documents
    rounds = [(contender(document, "lakemirror"), contender(document, "delta-rs-batched"))
              for document in documents]
    ratios = [mirror["seconds"] / batched["seconds"] for mirror, batched in rounds]
    memory = [mirror["peak_rss_mb"] / batched["peak_rss_mb"] for mirror, batched in rounds]
    spec = documents[0]["spec"]
    found = [
        Target(f"`--scale 10` ({spec['table_rows']:,} rows, {spec['files']} files of "
               f"{spec['changes_per_file']:,} changes), cold, against delta-rs-batched",
               "; ".join(f"{seconds(mirror['seconds'])} against {seconds(batched['seconds'])}: "
                         f"{times(ratio)}" for (mirror, batched), ratio in zip(rounds, ratios)),
               "≤ 1.0× (median of the rounds)", median(ratios) <= 1.0),
        Target("peak memory at `--scale 10`, every process of the contender (lakemirror's "
               "engine included), against delta-rs-batched",
               "; ".join(f"{megabytes(mirror['peak_rss_mb'])} against "
                         f"{megabytes(batched['peak_rss_mb'])}: {times(ratio)}"
                         for (mirror, batched), ratio in zip(rounds, memory)),
               "≤ 0.20× (median of the rounds)", median(memory) <= 0.2)]
    staging = [figure for document in documents if (figure := measured(document, "staging"))]
    if staging:
        found.append(_staging_target("`--scale 10`", staging))
    return found


def _scale_100(sets: Mapping[str, FigureSet]) -> list[Target]:
    document = sets["scale-100"].documents[0]
    mirror = contender(document, "lakemirror")
    others = "; ".join(f"{result['name']}: {result['message']} after {seconds(result['seconds'])}"
                       for result in document["contenders"] if result["name"] != "lakemirror")
    return [Target(f"`--scale 100` ({document['spec']['table_rows']:,} rows) under "
                   f"{document['memory_limit_gb']:g} GB per contender",
                   f"lakemirror {seconds(mirror['seconds'])}, peak "
                   f"{megabytes(mirror['peak_rss_mb'])}, {mirror['message']}; {others}",
                   "lakemirror completes, verified", bool(mirror["verified"]))]


def _verify_cost(sets: Mapping[str, FigureSet]) -> list[Target]:
    documents = sets["verify-cost"].documents
    largest = [document["verify_cost"]["sizes"][-1] for document in documents]
    ratios = [size["stages"][0]["ratio"] for size in largest]
    return [Target(f"`lakemirror verify` of a {largest[0]['table_rows']:,}-row table against "
                   "one scan of it", ", ".join(times(ratio) for ratio in ratios),
                   "about one scan (≤ 1.5×)", median(ratios) <= 1.5)]


def _memory(document: Document) -> list[Target]:
    found = []
    for figure in ("memory", "memory_csv"):
        memory = measured(document, figure)
        if memory:
            found.append(Target(
                f"staging one {memory['file_gb']:.2f} GB {memory['file_format']} file "
                f"({memory['rows']:,} rows)", f"{megabytes(memory['above_idle_mb'])} above idle "
                f"(peak {megabytes(memory['peak_rss_mb'])})", "< 1 GB above idle",
                memory["above_idle_mb"] < GIGABYTE_MB))
    return found


def _wide_table(table: Document, ratios: dict[str, float | None]) -> str:
    ratio = ratios.get(f"{table['columns']}/10")
    return (f"{table['columns']:,} columns {seconds(table['seconds'])}"
            + (f" ({times(ratio)})" if ratio else ""))


def _wide(document: Document) -> list[Target]:
    wide = measured(document, "wide_tables")
    if not wide:
        return []
    shown = ", ".join(_wide_table(table, wide["ratios"]) for table in wide["tables"]
                      if table["seconds"] is not None)
    every = all(table["verified"] for table in wide["tables"])
    ratio = wide["ratios"].get("300/10")
    return [Target("300 columns against 10 (incremental run); 1,000 columns work",
                   f"{shown}; {'all verified' if every else 'not all verified'}",
                   "300 columns ≤ 2× 10 columns", every and ratio is not None and ratio <= 2)]


def _storage(document: Document) -> list[Target]:
    found = []
    for figure, mode in (("storage", "deletion vectors"),
                         ("storage_copy_on_write", "copy-on-write")):
        storage = measured(document, figure)
        if storage:
            ratios = storage["ratios"]
            found.append(Target(
                f"storage, {mode}, after {storage['files']} files, `maintain` and the retention "
                "window elapsed", f"staging {times(ratios['staging on disk/live'])}, mirrored "
                f"{times(ratios['mirrored on disk/live'])} the live data on disk "
                f"({times(ratios['mirrored current/live'])} current; before `maintain` "
                f"{times(storage['mirrored_before']['on_disk'] / storage['live_bytes'])}); "
                f"{storage['rebuild_message']}", "≤ 2× live data on disk",
                max(ratios["staging on disk/live"], ratios["mirrored on disk/live"]) <= 2
                and bool(storage["rebuild_verified"])))
    return found


def _resources(sets: Mapping[str, FigureSet]) -> list[Target]:
    document = sets["resources"].documents[0]
    found = _memory(document) + _wide(document) + _storage(document)
    warehouse = measured(document, "object_warehouse")
    if warehouse:
        requests = ", ".join(f"{method} {count:,}"
                             for method, count in sorted(warehouse["requests"].items()))
        found.append(Target("warehouse on S3 (moto on loopback) against local disk",
                            f"{seconds(warehouse['s3_seconds'])} against "
                            f"{seconds(warehouse['disk_seconds'])}: {times(warehouse['ratio'])}; "
                            f"{sum(warehouse['requests'].values()):,} requests ({requests}); "
                            f"{warehouse['message']}", "", None))
    return found


ROWS: dict[str, Callable[[Mapping[str, FigureSet]], list[Target]]] = {
    "many-tables": _many_tables, "standard": _standard, "scale-10": _scale_10,
    "scale-100": _scale_100, "verify-cost": _verify_cost, "resources": _resources}


def targets_table(sets: Mapping[str, FigureSet], names: Iterable[str]) -> str:
    """The targets of the sets `names`, each with its figure and whether it is met."""
    return table(("figure", "result", "target", "met"),
                 (target.row() for name in names for target in ROWS[name](sets)))
