"""The `lakemirror bench` command with every option (also `python -m lakemirror.bench`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

PATH = click.Path(path_type=Path, file_okay=False)
CONTENDERS = "lakemirror,lakemirror-warm,delta-rs,delta-rs-batched,floor,spark"


def _integers(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of integers"
                                 ) from None


def _columns(context: click.Context, parameter: click.Parameter,
             value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    widths = _integers(value)
    if any(width < 11 for width in widths):
        raise click.BadParameter("each width must be at least 11 (the narrow table has 10)")
    return widths


def _sizes(context: click.Context, parameter: click.Parameter,
           value: str | None) -> tuple[int, ...] | None:
    sizes = _integers(value) if value is not None else None
    if sizes is not None and (not sizes or min(sizes) < 1):
        raise click.BadParameter("give one or more table sizes of at least 1 row")
    return sizes


@click.command(name="bench")
@click.option("--rows", type=click.IntRange(min=1), default=None,
              help="Rows of each table's initial load [1,000,000].")
@click.option("--files", type=click.IntRange(min=1), default=None,
              help="Change files per table [10].")
@click.option("--changes", type=click.IntRange(min=1), default=None,
              help="Changes per file [100,000].")
@click.option("--tables", type=click.IntRange(min=1), default=None, help="Tables [1].")
@click.option("--scale", type=click.IntRange(min=1), default=1, show_default=True,
              help="Multiply the table's rows and each file's changes: --scale 10 mirrors "
                   "10,000,000 rows and 10 files of 1,000,000 changes.")
@click.option("--op-mix", default=None, metavar="OP=SHARE,...",
              help="Share of update, insert, delete, upsert [update=0.4,insert=0.2,"
                   "delete=0.2,upsert=0.2].")
@click.option("--repeat-share", type=float, default=None,
              help="Share of a file's changes that hit a key changed earlier in it [0.1].")
@click.option("--seed", type=int, default=None, help="Seed of the generator [7].")
@click.option("--smoke", is_flag=True,
              help="Tiny sizes for everything not given: proves the benchmark works.")
@click.option("--contenders", default=CONTENDERS, show_default=True,
              help="Comma-separated: lakemirror (fresh project), lakemirror-warm (the "
                   "project's second run), delta-rs, delta-rs-batched, floor, spark.")
@click.option("--memory-limit", "memory_limit_gb", default=None, metavar="GB",
              type=click.FloatRange(min=0, min_open=True),
              help="Stop a contender whose processes together exceed GB of resident memory "
                   "and report it out of memory; the others and the figures still run.")
@click.option("--freshness/--no-freshness", default=True, show_default=True,
              help="Time a 1k-change file from landing to visible, on a warm engine; "
                   "also copy-on-write (no deletion vectors).")
@click.option("--idle/--no-idle", default=True, show_default=True,
              help="Time `lakemirror run --json` in a cold process with nothing new.")
@click.option("--idle-runs", type=click.IntRange(min=1), default=None,
              help="Idle runs timed [3; smoke 1].")
@click.option("--staging/--no-staging", default=True, show_default=True,
              help="Rows/s of lakemirror's staging phase against pyarrow reading every change "
                   "file and writing it back (the floor), and their ratio.")
@click.option("--landing-zone", default=None, metavar="URL",
              help="Also publish the zone under a new prefix of this object-store URL "
                   "(credentials as for `lakemirror run`): listing objects/s, read MB/s, "
                   "first and idle `lakemirror run` seconds and requests; the prefix is "
                   "deleted afterwards.")
@click.option("--memory/--no-memory", default=True, show_default=True,
              help="Peak RSS above idle staging one large Parquet and one large CSV file.")
@click.option("--memory-gb", type=click.FloatRange(min=0), default=None,
              help="Size of both files in GB; 0 skips them [2; smoke 0.01].")
@click.option("--csv-memory-gb", type=click.FloatRange(min=0), default=None,
              help="Size of the CSV file in GB; 0 skips it [--memory-gb].")
@click.option("--wide/--no-wide", default=True, show_default=True,
              help="Incremental-run seconds of wide tables against a 10-column one.")
@click.option("--wide-columns", callback=_columns, default=None, metavar="N,...",
              help="Widths of the wide tables [300,1000; smoke 40].")
@click.option("--wide-rows", type=click.IntRange(min=1), default=None,
              help="Rows of each wide table [50,000; smoke 1,000].")
@click.option("--wide-changes", type=click.IntRange(min=1), default=None,
              help="Changes in each wide table's change file [5,000; smoke 100].")
@click.option("--storage/--no-storage", default=True, show_default=True,
              help="Storage after many change files and `lakemirror maintain`, and a rebuild; "
                   "also copy-on-write (no deletion vectors).")
@click.option("--storage-files", type=click.IntRange(min=1), default=None,
              help="Change files, one run each [100; smoke 3].")
@click.option("--storage-rows", type=click.IntRange(min=1), default=None,
              help="Rows of the storage table [100,000; smoke 2,000].")
@click.option("--storage-changes", type=click.IntRange(min=1), default=None,
              help="Changes per file of the storage table [1,000; smoke 100].")
@click.option("--object-warehouse/--no-object-warehouse", default=True, show_default=True,
              help="Seconds of a cold run into a warehouse on moto's S3 server (started on "
                   "loopback; needs the dev extra moto[server]) against local disk, and its "
                   "requests.")
@click.option("--merge-growth", "merge_growth_rows", callback=_sizes, default=None,
              metavar="ROWS,...",
              help="Time warm runs applying the same changes to tables of these sizes (e.g. "
                   "1000000,10000000,100000000), with deletion vectors and copy-on-write: "
                   "each run's seconds, phases and peak RSS, and how the merge grows [off].")
@click.option("--merge-growth-changes", type=click.IntRange(min=1), default=None,
              help="Changes per change file of --merge-growth [100,000; smoke 100].")
@click.option("--merge-growth-copy-on-write/--no-merge-growth-copy-on-write",
              "merge_growth_copy_on_write", default=True, show_default=True,
              help="Also measure --merge-growth copy-on-write (minutes per run at 100,000,000 "
                   "rows).")
@click.option("--verify-cost", "verify_cost_rows", callback=_sizes, default=None,
              metavar="ROWS,...",
              help="Time `lakemirror verify` of tables of these sizes (e.g. 1000000,10000000), "
                   "each with one change file, against one full scan of the table, before and "
                   "after `lakemirror maintain`: seconds, peak RSS and their ratio [off].")
@click.option("--verify-cost-changes", type=click.IntRange(min=1), default=None,
              help="Changes in the change file of --verify-cost [100,000; smoke 100].")
@click.option("--downstream", "downstream_rows", callback=_sizes, default=None,
              metavar="ROWS,...",
              help="Time a model of yours on `lakemirror.mirror_changes` (apply_changes) "
                   "against the same SQL rebuilt as a table, over tables of these sizes (e.g. "
                   "1000000,10000000), one change file a round: each model's build, their "
                   "ratio, the two compared every round [off].")
@click.option("--downstream-changes", type=click.IntRange(min=1), default=None,
              help="Changes per change file of --downstream [1,000; smoke 100].")
@click.option("--plot", "plot_file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, metavar="FILE.png",
              help="Draw time against table size and changes per file into this PNG.")
@click.option("--dir", "directory", type=PATH, default=Path("bench-run"), show_default=True,
              help="Working folder (recreated); progress goes to its progress.log too. A "
                   "contender's output is removed once checked (its logs stay), but for the "
                   "lakemirror run the idle figure reuses.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def bench(rows: int | None, files: int | None, changes: int | None, tables: int | None,
          scale: int, op_mix: str | None, repeat_share: float | None, seed: int | None, smoke: bool,
          contenders: str, memory_limit_gb: float | None, freshness: bool, idle: bool,
          idle_runs: int | None, staging: bool,
          landing_zone: str | None, memory: bool,
          memory_gb: float | None, csv_memory_gb: float | None, wide: bool,
          wide_columns: tuple[int, ...] | None, wide_rows: int | None,
          wide_changes: int | None, storage: bool, storage_files: int | None,
          storage_rows: int | None, storage_changes: int | None, object_warehouse: bool,
          merge_growth_rows: tuple[int, ...] | None, merge_growth_changes: int | None,
          merge_growth_copy_on_write: bool, verify_cost_rows: tuple[int, ...] | None,
          verify_cost_changes: int | None, downstream_rows: tuple[int, ...] | None,
          downstream_changes: int | None, plot_file: Path | None,
          directory: Path, as_json: bool) -> None:
    """Benchmark lakemirror against delta-rs (per file and batched), the in-memory floor and
    Spark on one generated landing zone, every final table verified; then idle runs, staging
    against pyarrow, freshness, memory, wide tables, storage after many files and the
    warehouse on S3; with --merge-growth, how a MERGE's time grows with the table; with
    --verify-cost, what `lakemirror verify` costs against a full scan; with --downstream, a
    downstream model's incremental build against its rebuild."""
    from lakemirror.bench.command import run_bench_command
    from lakemirror.errors import LakemirrorError

    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "progress.log"
    log.write_text("")

    def progress(message: str) -> None:
        with log.open("a") as lines:
            lines.write(f"{time.strftime('%H:%M:%S')} {message}\n")
        if not as_json:
            click.echo(message, err=True)

    try:
        report = run_bench_command(
            rows=rows, files=files, changes=changes, tables=tables, scale=scale, op_mix=op_mix,
            repeat_share=repeat_share, seed=seed, smoke=smoke, contenders=contenders,
            memory_limit_gb=memory_limit_gb,
            freshness=freshness, memory_gb=0.0 if not memory else memory_gb,
            csv_memory_gb=0.0 if not memory else csv_memory_gb, plot_file=plot_file,
            directory=directory, as_json=as_json, progress=progress,
            idle_runs=idle_runs if idle else 0, staging=staging, landing_zone=landing_zone,
            wide_columns=wide_columns if wide else (), wide_rows=wide_rows,
            wide_changes=wide_changes,
            storage_files=storage_files if storage else 0, storage_rows=storage_rows,
            storage_changes=storage_changes, object_warehouse=object_warehouse,
            merge_growth_rows=merge_growth_rows, merge_growth_changes=merge_growth_changes,
            merge_growth_copy_on_write=merge_growth_copy_on_write,
            verify_cost_rows=verify_cost_rows, verify_cost_changes=verify_cost_changes,
            downstream_rows=downstream_rows, downstream_changes=downstream_changes)
    except LakemirrorError as error:  # as the CLI's error boundary would (`python -m`)
        click.secho(f"error: {error}", fg="red", err=True)
        sys.exit(error.exit_code)
    click.echo(report.text)
    if report.failures:
        click.secho(f"bench: {len(report.failures)} failed:", fg="red", err=True)
        for failure in report.failures:
            click.secho(f"  {failure}", fg="red", err=True)
        sys.exit(1)
