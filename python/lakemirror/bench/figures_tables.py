"""performance.md's tables of figures, each rendered from the committed JSON of its sets."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from lakemirror.bench.figures_source import (
    Document, FigureSet, commands, contender, measured, megabytes, seconds, table, times)
from lakemirror.bench.figures_targets import targets_table

PHASES = ("staging", "dbt_parse", "engine_session", "merge", "bookkeeping", "dbt_other", "total")


def _joined(values: Iterable[str]) -> str:
    return ", ".join(values)


def phases_table(runs: Iterable[tuple[str, Document]]) -> str:
    """Seconds of each phase of lakemirror's runs."""
    return table(("run", *PHASES), ((label, *(f"{phases[phase]:.2f}" for phase in PHASES))
                                    for label, phases in runs))


def contenders_table(document: Document) -> str:
    return table(("contender", "seconds", "change rows/s", "peak RSS", "result"), (
        (result["name"], seconds(result["seconds"]) if result["seconds"] is not None else "–",
         f"{result['rows_per_second']:,.0f}" if result["rows_per_second"] else "–",
         megabytes(result["peak_rss_mb"]) if result["peak_rss_mb"] is not None else "–",
         result["message"]) for result in document["contenders"]))


def verify_cost_block(sets: Mapping[str, FigureSet]) -> str:
    rounds = [document["verify_cost"]["sizes"] for document in sets["verify-cost"].documents]
    rows = []
    for index, size in enumerate(rounds[0]):
        for stage_index, stage in enumerate(size["stages"]):
            each = [sizes[index]["stages"][stage_index] for sizes in rounds]
            rows.append((f"{stage['mirrored_rows']:,}",
                         f"{stage['stage']}: {stage['staged_rows']:,}",
                         _joined(seconds(cost["verify"]["seconds"]) for cost in each),
                         _joined(seconds(cost["scan"]["seconds"]) for cost in each),
                         _joined(times(cost["ratio"]) for cost in each),
                         _joined(seconds(cost["staging_scan"]["seconds"]) for cost in each),
                         _joined(megabytes(cost["verify"]["peak_rss_mb"]) for cost in each)))
    verdicts = [stage["verdict"] for sizes in rounds for size in sizes for stage in size["stages"]]
    every = all(": ok:" in verdict for verdict in verdicts)
    maintain = "; ".join(
        f"{_joined(seconds(sizes[index]['maintain_seconds']) for sizes in rounds)} at "
        f"{size['table_rows']:,} rows" for index, size in enumerate(rounds[0]))
    return "\n\n".join((
        commands(sets, ["verify-cost"]), targets_table(sets, ["verify-cost"]),
        table(("table rows", "staged rows", "verify", "one scan of the mirrored table",
               "verify / scan", "scan of staging", "verify's peak RSS"), rows),
        ("Every verify said ok." if every else "Not every verify said ok.")
        + f" `lakemirror maintain` itself (which proves the mirror before it folds staging) "
          f"took {maintain}."))


def _scale_round(label: str, document: Document) -> tuple[str, ...]:
    mirror, batched = contender(document, "lakemirror"), contender(document, "delta-rs-batched")
    floor = contender(document, "floor")
    return (label, seconds(mirror["seconds"]), seconds(batched["seconds"]),
            times(mirror["seconds"] / batched["seconds"]), seconds(floor["seconds"]),
            megabytes(mirror["peak_rss_mb"]), megabytes(batched["peak_rss_mb"]),
            times(mirror["peak_rss_mb"] / batched["peak_rss_mb"]))


def scale_block(sets: Mapping[str, FigureSet]) -> str:
    rounds = sets["scale-10"].documents
    large = sets["scale-100"].documents[0]
    idle = large["idle_run"]
    staging = measured(large, "staging")
    return "\n\n".join((
        commands(sets, ["scale-10", "scale-100"]), targets_table(sets, ["scale-10", "scale-100"]),
        table(("`--scale 10` round", "lakemirror", "delta-rs-batched", "ratio", "floor",
               "lakemirror's peak RSS", "delta-rs-batched's peak RSS", "ratio"),
              (_scale_round(f"{number}", document)
               for number, document in enumerate(rounds, start=1))),
        f"`--scale 100` under {large['memory_limit_gb']:g} GB per contender:",
        contenders_table(large),
        f"The idle run after it: {_joined(seconds(value) for value in idle['seconds'])}. "
        + ("" if staging else "The staging figure failed in this round; it is not shown."),
        "Phases of lakemirror's runs (seconds):",
        phases_table([*((f"`--scale 10`, round {number}", contender(document, "lakemirror")
                         ["phases"]) for number, document in enumerate(rounds, start=1)),
                      ("`--scale 100`", contender(large, "lakemirror")["phases"])])))


def _growth_rows(deletion_vectors: Document, copy_on_write: Document) -> list[tuple[str, ...]]:
    def medians(document: Document, mode: str) -> dict[int, Document]:
        return {entry["table_rows"]: entry for entry in document["merge_growth"]["medians"]
                if entry["mode"].startswith(mode)}

    vectors = medians(deletion_vectors, "deletion vectors")
    copies = medians(copy_on_write, "copy-on-write")
    sizes = {size["table_rows"]: size for size in deletion_vectors["merge_growth"]["sizes"]}
    first = min(vectors)
    rows: list[tuple[str, ...]] = []
    for rows_count, entry in sorted(vectors.items()):
        copy = copies.get(rows_count)
        peak = max(run["peak_rss_mb"] for run in sizes[rows_count]["runs"])
        rows.append((
            f"{rows_count:,}", f"{seconds(entry['merge'])} "
            f"({times(entry['merge'] / vectors[first]['merge'])})",
            seconds(entry["phases"]["dbt_other"]), seconds(entry["seconds"]), megabytes(peak),
            f"{seconds(copy['merge'])} ({times(copy['merge'] / copies[first]['merge'])})"
            if copy else "not measured", seconds(copy["seconds"]) if copy else ""))
    return rows


def merge_growth_block(sets: Mapping[str, FigureSet]) -> str:
    vectors = sets["merge-growth-deletion-vectors"].documents[0]
    copies = sets["merge-growth-copy-on-write"].documents[0]
    sizes = vectors["merge_growth"]["sizes"]
    in_full = [f"{size['table_rows']:,}" for size in sizes if size["verified_in_full"]]
    sampled = [f"{size['table_rows']:,}" for size in sizes if not size["verified_in_full"]]
    checks = f"in full at {' and '.join(in_full)} rows" + (
        f", by row count and sampled keys at {' and '.join(sampled)} rows" if sampled else "")
    loads = "; ".join(f"{seconds(size['initial_load_seconds'])} at {size['table_rows']:,} rows"
                      for size in sizes)
    every = all(size["verified"] for size in sizes)
    return "\n\n".join((
        commands(sets, ["merge-growth-deletion-vectors", "merge-growth-copy-on-write"]),
        f"The same {vectors['merge_growth']['changes_per_file']:,} changes a file into tables "
        "of each size (two warm runs each, one change file a run; the median merge phase and "
        "run; the peak of every process, the engine included):",
        table(("table rows", "deletion vectors: merge (growth)", "dbt_other", "run", "peak RSS",
               "copy-on-write: merge (growth)", "run"), _growth_rows(vectors, copies)),
        ("Every table verified" if every else "Not every table verified")
        + f", {checks}. The initial loads (before the figure's runs): {loads}."))


def _spread(values: Document, show: Callable[[float], str] = seconds) -> str:
    return f"{show(values['median'])} ({show(values['min'])}–{show(values['max'])})"


def downstream_block(sets: Mapping[str, FigureSet]) -> str:
    figure = sets["downstream"].documents[0]["downstream"]
    sizes = figure["sizes"]
    every = all(size["every_round_verified"] for size in sizes)
    loads = "; ".join(f"{seconds(size['initial_load_seconds'])} at {size['table_rows']:,} rows"
                      for size in sizes)
    return "\n\n".join((
        commands(sets, ["downstream"]),
        f"{len(sizes[0]['rounds'])} rounds a size, each one change file of "
        f"{figure['changes_per_file']:,} changes applied by a warm `lakemirror run`; each "
        "model's execution time as dbt records it (median, then min–max):",
        table(("table rows", "incremental build", "rebuild", "rebuild / incremental",
               "the mirror model", "the run"),
              ((f"{size['table_rows']:,}", _spread(size["incremental"]),
                _spread(size["rebuild"]), _spread(size["ratio"], times), _spread(size["mirror"]),
                _spread(size["run"])) for size in sizes)),
        ("The incremental model equalled its rebuild after every round"
         if every else "The incremental model did not equal its rebuild after every round")
        + f". The initial loads (the mirror and both models' first builds, before the "
          f"rounds): {loads}."))


def fixed_cost_block(sets: Mapping[str, FigureSet]) -> str:
    names = [name for name in ("many-tables", "standard") if name in sets]
    parts = [commands(sets, names), targets_table(sets, names)]
    runs = []
    if "many-tables" in sets:
        document = sets["many-tables"].documents[0]
        parts += [f"{document['spec']['tables']} small tables:", contenders_table(document)]
        runs.append((f"{document['spec']['tables']} tables, cold",
                     contender(document, "lakemirror")["phases"]))
    if "standard" in sets:
        document = sets["standard"].documents[0]
        parts += ["The standard size (the defaults):", contenders_table(document)]
        runs += [(f"standard, {result['name']}", result["phases"])
                 for result in document["contenders"] if result["phases"]]
    parts += ["Phases of lakemirror's runs (seconds):", phases_table(runs)]
    return "\n\n".join(parts)


def resources_block(sets: Mapping[str, FigureSet]) -> str:
    return "\n\n".join((commands(sets, ["resources"]), targets_table(sets, ["resources"])))


def sweep_block(sets: Mapping[str, FigureSet]) -> str:
    """The plot's points, a table per axis (the plot is drawn from them)."""
    points = sets["sweep"].documents[0]["plot"]
    parts = [commands(sets, ["sweep"])]
    for axis, by_contender in points.items():
        names = list(by_contender)
        sizes = sorted({size for values in by_contender.values() for size, _ in values})
        cells = {(name, size): value for name in names for size, value in by_contender[name]}
        parts.append(table((axis, *names), ((f"{size:,}", *(
            seconds(cells[name, size]) if (name, size) in cells else "–" for name in names))
            for size in sizes)))
    return "\n\n".join(parts)
