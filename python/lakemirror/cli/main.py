"""`lakemirror` commands. One error boundary turns domain errors into a message and exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lakemirror.bench.cli import bench
from lakemirror.cli.boundary import ErrorBoundary
from lakemirror.cli.engine import cli_settings, engine
from lakemirror.cli.locations import LOCATION, PATH, WAREHOUSE
from lakemirror.cli.proof import resync, verify
from lakemirror.cli.status import status
from lakemirror.errors import ConfigError, ExitCode
from lakemirror.environment import read_settings

if TYPE_CHECKING:
    from lakemirror.service import MirrorService
    from lakemirror.status import NodeStatus, TableStatus
    from lakemirror.storage import Location

Command = TypeVar("Command", bound=Callable[..., Any])

@click.group(cls=ErrorBoundary, context_settings={"auto_envvar_prefix": "LAKEMIRROR"})
@click.version_option(package_name="lakemirror", prog_name="lakemirror")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """lakemirror: open mirroring of a landing zone into Delta tables, with dbt."""
    ctx.meta["debug"] = debug
    ctx.obj = replace(read_settings(), debug=debug)  # read once; a bad variable fails here


def mirror_options(command: Command) -> Command:
    """Options shared by `run` and `ingest`."""
    for option in reversed([
        click.option("--landing-zone", type=LOCATION, required=True,
                     envvar="LAKEMIRROR_LANDING_ZONE",
                     help="Landing zone: a folder, or a OneLake, ADLS, S3 or GCS URL "
                          "[env LAKEMIRROR_LANDING_ZONE]."),
        click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
                     help="Warehouse folder for Delta tables [env LAKEMIRROR_WAREHOUSE]."),
        click.option("--project-dir", type=PATH, default=None, envvar="LAKEMIRROR_PROJECT_DIR",
                     help="dbt project (default: the current directory, as for dbt) "
                          "[env LAKEMIRROR_PROJECT_DIR]."),
        click.option("--target", default="embedded", show_default=True,
                     envvar="LAKEMIRROR_TARGET",
                     help="dbt target's name in the project's profiles; its engine is its "
                          "spark.lakemirror.engine mark [env LAKEMIRROR_TARGET]."),
        click.option("--retention-days", type=float, default=7.0, show_default=True,
                     envvar="LAKEMIRROR_RETENTION_DAYS",
                     help="Delete files in _ProcessedFiles/ and _FilesReadyToDelete/ after this "
                          "many days [env LAKEMIRROR_RETENTION_DAYS]."),
        click.option("--table", "tables", multiple=True, metavar="SCHEMA.TABLE",
                     help="Only this table (repeatable); runs on disjoint tables can run "
                          "side by side."),
        click.option("--lock-timeout", type=float, default=600.0, show_default=True,
                     envvar="LAKEMIRROR_LOCK_TIMEOUT",
                     help="Seconds to wait for tables another run is working on "
                          "[env LAKEMIRROR_LOCK_TIMEOUT]."),
        click.option("--engine-timeout", type=click.FloatRange(min=1), default=3600.0,
                     show_default=True, envvar="LAKEMIRROR_ENGINE_TIMEOUT",
                     help="Seconds one dbt invocation may take before lakemirror stops the "
                          "embedded engine and fails its tables [env LAKEMIRROR_ENGINE_TIMEOUT]."),
        click.option("--rebind-landing-zone", "rebind", is_flag=True,
                     envvar="LAKEMIRROR_REBIND_LANDING_ZONE",
                     help="Mirror this landing zone although the warehouse mirrors another "
                          "one, and bind it to this one [env LAKEMIRROR_REBIND_LANDING_ZONE]."),
        click.option("--confirm-drops", is_flag=True, envvar="LAKEMIRROR_CONFIRM_DROPS",
                     help="Drop the tables whose folders are gone even when they are more "
                          "than --max-drop-share of the tables [env LAKEMIRROR_CONFIRM_DROPS]."),
        click.option("--max-drop-share", type=click.FloatRange(0, 1), default=0.5,
                     show_default=True, envvar="LAKEMIRROR_MAX_DROP_SHARE",
                     help="A run dropping more than one table, and more than this share of "
                          "the tables, needs --confirm-drops [env LAKEMIRROR_MAX_DROP_SHARE]."),
        click.option("--json", "as_json", is_flag=True, help="Print the status as JSON."),
    ]):
        command = option(command)
    return command


@cli.command()
@mirror_options
@click.option("--watch", "watch_interval", type=click.FloatRange(min=0.05), default=None,
              metavar="SECONDS", help="Keep running: check the zone every SECONDS and mirror "
                                      "again when a file lands (warm engine, parsed project).")
def run(landing_zone: Location, warehouse: Location, project_dir: Path | None, target: str,
        retention_days: float, tables: tuple[str, ...], lock_timeout: float,
        engine_timeout: float, rebind: bool, confirm_drops: bool, max_drop_share: float,
        as_json: bool, watch_interval: float | None) -> None:
    """Ingest new files, generate models for new tables, run `dbt build`, print the status
    of the tables and of the project's own models and tests it built.

    Exit code 0 when all are healthy, 1 when some failed, 2 for usage or configuration
    errors, 3 when refused to protect the data (a wrong landing zone, a mass drop).
    """
    service = _service(landing_zone, warehouse, project_dir, target, retention_days,
                       lock_timeout, engine_timeout, as_json, rebind=rebind,
                       confirm_drops=confirm_drops, max_drop_share=max_drop_share)
    if watch_interval is None:
        _report(service.run(tables), as_json, service.run_warnings, service.run_models)
    else:
        _watch(service, watch_interval, tables, as_json)


def _watch(service: MirrorService, interval: float, tables: tuple[str, ...],
           as_json: bool) -> None:
    """Mirror again whenever the zone changes, until interrupted (exit code 0). A run's report
    is printed only when it changed (with --json: one JSON document on one line), a warning
    once until it goes away. Ctrl-C during a run stops once the run is done (its tables are
    left consistent and reported); a second Ctrl-C stops at once."""
    import signal
    import threading

    from lakemirror.status import run_text, to_json
    from lakemirror.watch import WatchReport, one_line, watch

    stop = threading.Event()
    report = WatchReport(service.progress)
    service.progress = report.on_progress

    def on_run(statuses: list[TableStatus]) -> None:
        models = service.run_models
        if report.changed(statuses, service.run_warnings if as_json else (), models):
            click.echo(one_line(to_json(statuses, service.run_warnings, models)) if as_json
                       else run_text(statuses, models))

    def interrupted(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        click.echo("stopping after this run (Ctrl-C again stops now)", err=True)
        stop.set()

    signal.signal(signal.SIGINT, interrupted)
    click.echo(f"watching {service.settings.landing_zone} every {interval:g} s; Ctrl-C stops",
               err=True)
    try:
        watch(service, interval, stop, on_run, tables)
    except KeyboardInterrupt:
        pass
    sys.exit(ExitCode.HEALTHY)


@cli.command()
@mirror_options
def ingest(landing_zone: Location, warehouse: Location, project_dir: Path | None, target: str,
           retention_days: float, tables: tuple[str, ...], lock_timeout: float,
           engine_timeout: float, rebind: bool, confirm_drops: bool, max_drop_share: float,
           as_json: bool) -> None:
    """Ingest new files and generate models, without running dbt (run `dbt build` after)."""
    service = _service(landing_zone, warehouse, project_dir, target, retention_days,
                       lock_timeout, engine_timeout, as_json, rebind=rebind,
                       confirm_drops=confirm_drops, max_drop_share=max_drop_share)
    _report(service.ingest_only(tables), as_json, service.run_warnings)


def _report(statuses: Sequence[TableStatus], as_json: bool, warnings: Sequence[str],
            models: Sequence[NodeStatus] = ()) -> None:
    """The run's tables and the project's own nodes it built, and the exit code they make."""
    from lakemirror.status import run_text, to_json

    click.echo(to_json(statuses, warnings, models) if as_json else run_text(statuses, models))
    failed = any(status.unhealthy for status in statuses) or any(node.failed for node in models)
    sys.exit(ExitCode.FAILED if failed else ExitCode.HEALTHY)


@cli.command()
@click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder [env LAKEMIRROR_WAREHOUSE].")
@click.option("--table", "tables", multiple=True, metavar="SCHEMA.TABLE",
              help="Only this table (repeatable).")
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              envvar="LAKEMIRROR_LOCK_TIMEOUT",
              help="Seconds to wait for tables a run is working on [env LAKEMIRROR_LOCK_TIMEOUT].")
@click.option("--target", default=None, envvar="LAKEMIRROR_TARGET",
              help="dbt target whose engine runs OPTIMIZE on tables with liquid clustering "
                   "(spark or connect); without it they are not reclustered "
                   "[env LAKEMIRROR_TARGET].")
@click.option("--project-dir", type=PATH, default=None, envvar="LAKEMIRROR_PROJECT_DIR",
              help="dbt project of --target (default: the current directory) "
                   "[env LAKEMIRROR_PROJECT_DIR].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def maintain(warehouse: Location, tables: tuple[str, ...], lock_timeout: float,
             target: str | None, project_dir: Path | None, as_json: bool) -> None:
    """Fold applied changes out of staging, compact mirrored tables (OPTIMIZE on --target
    for clustered ones) and vacuum both (files older than delta.deletedFileRetentionDuration,
    default 7 days). `run` does it too, every LAKEMIRROR_MAINTENANCE_HOURS (24). Exit code 1
    when a step failed on some table (the others go on); a step skipped on purpose says why."""
    from lakemirror import maintenance
    from lakemirror.run.maintain import engine_optimize, target_settings
    from lakemirror.storage.warehouse import warehouse_location

    env = cli_settings()
    location = warehouse_location(warehouse)
    results = maintenance.maintain(
        location, tables, lock_timeout=lock_timeout, lease_seconds=env.lease_seconds,
        optimize=None if target is None else engine_optimize(
            target_settings(location, project_dir, target, env)),
        progress=lambda message: click.echo(message, err=True))
    for line in ([maintenance.to_json(results)] if as_json
                 else [maintenance.to_text(result) for result in results]):
        click.echo(line)
    sys.exit(ExitCode.FAILED if any(result.failed for result in results) else ExitCode.HEALTHY)


@cli.command()
@click.argument("table", required=False, metavar="[SCHEMA.TABLE]")
@click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder [env LAKEMIRROR_WAREHOUSE].")
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              envvar="LAKEMIRROR_LOCK_TIMEOUT",
              help="Seconds to wait for the table if a run is working on it "
                   "[env LAKEMIRROR_LOCK_TIMEOUT].")
def restore(table: str | None, warehouse: Location, lock_timeout: float) -> None:
    """Bring back a dropped table (its newest copy in the warehouse's dropped area); the next
    run generates its model again and goes on from it. Without SCHEMA.TABLE, list the copies."""
    from lakemirror.binding import read_binding
    from lakemirror.landing.zone import open_zone
    from lakemirror.recovery import restore_table
    from lakemirror.staging import Warehouse
    from lakemirror.staging.dropped import dropped_copies
    from lakemirror.staging.lock import table_locks
    from lakemirror.storage import parse_location
    from lakemirror.storage.warehouse import warehouse_location

    layout = Warehouse(warehouse_location(warehouse))
    if table is None:
        copies = dropped_copies(layout)
        click.echo("\n".join(f"{copy.qualified_name}  incarnation {copy.incarnation}  "
                             f"{copy.reason} on {copy.dropped_on}" for copy in copies)
                   or "no dropped tables are kept in this warehouse")
        return
    binding = read_binding(layout.storage)
    table = table.lower()  # as mirrored tables are named
    env = cli_settings()
    with table_locks(layout.storage, [table], timeout=lock_timeout, lease_seconds=env.lease_seconds,
                     progress=lambda message: click.echo(message, err=True)):
        copy = restore_table(layout, table, None if binding is None else
                             open_zone(parse_location(binding.zone.resolved,
                                                      storage=env.storage)))
    click.echo(f"restored {copy.qualified_name} (incarnation {copy.incarnation}, "
               f"{copy.reason} on {copy.dropped_on}); the next run builds its model again")


@cli.command(name="inspect")
@click.argument("table", required=False)
@click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder [env LAKEMIRROR_WAREHOUSE].")
@click.option("--history", type=click.IntRange(min=0), default=5, show_default=True,
              help="How many recent commits to show.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per table.")
def inspect_tables(table: str | None, warehouse: Location, history: int,
                   as_json: bool) -> None:
    """Protocol, table features, properties and recent history of TABLE (`Schema.Table`,
    `Table` for dbo, or a staging/control table), or of every table, from the Delta log."""
    from lakemirror.cli.inspect import inspect_json, inspect_text, table_logs

    logs = table_logs(warehouse, table, history=history)
    click.echo(inspect_json(logs) if as_json else inspect_text(logs))


@cli.command()
@click.option("--readers", default=None, envvar="LAKEMIRROR_READERS",
              help="Comma-separated reader profiles, e.g. delta-2.2,dbr-12.2,delta-rs "
                   "[env LAKEMIRROR_READERS; default: the default reader set].")
@click.option("--warehouse", type=WAREHOUSE, default=None, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder [env LAKEMIRROR_WAREHOUSE]; without it, list the "
                   "profiles.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def doctor(readers: str | None, warehouse: Location | None, as_json: bool) -> None:
    """Which readers can no longer read or write each table, and which feature is why; and
    whether new mirrored tables get deletion vectors or stay copy-on-write for them. The last
    line says who can reach the embedded engine here.

    Exit code 1 when a table is unreadable for a named reader (unwritable alone: 0).
    """
    from lakemirror.cli import inspect as report
    from lakemirror.delta import DEFAULT_READERS, PROFILES, profiles_named

    from lakemirror.cli.engine import access_line

    if warehouse is None and readers is None:
        profiles = list(PROFILES.values())
        click.echo(report.profiles_json(profiles) if as_json else
                   report.profiles_text(profiles) + "\n" + access_line())
        return
    if warehouse is None:
        raise ConfigError("doctor --readers needs the warehouse",
                          hint="pass --warehouse or set LAKEMIRROR_WAREHOUSE")
    results = report.doctor(warehouse, profiles_named(readers or ",".join(DEFAULT_READERS)))
    click.echo(report.doctor_json(results) if as_json else
               report.doctor_text(results) + "\n" + access_line())
    sys.exit(ExitCode.FAILED if any(result.unreadable for result in results)
             else ExitCode.HEALTHY)


cli.add_command(bench)  # its options live with the benchmark
cli.add_command(engine)
cli.add_command(status)
cli.add_command(verify)
cli.add_command(resync)


@cli.command()
@click.option("--dir", "directory", type=PATH, default=Path("demo"), show_default=True,
              help="Folder for the demo landing zone and warehouse.")
@click.option("--project-dir", type=PATH, default=None,
              help="dbt project (default: lakemirror's example project, in a git clone).")
def demo(directory: Path, project_dir: Path | None) -> None:
    """Write a demo landing zone, mirror it file by file, print status and a sample query."""
    from lakemirror.demo import run_demo
    from lakemirror.service import PROJECT_DIR

    if project_dir is None and not (PROJECT_DIR / "dbt_project.yml").is_file():
        raise ConfigError("the demo's example project (marts and seeds) comes with a git clone "
                          "of lakemirror, not with its package",
                          hint="run `make demo` in a clone, or pass --project-dir with a "
                               "project from `lakemirror init`")
    env = cli_settings()
    sys.exit(run_demo(directory.resolve(), echo=click.echo, env=env,
                      project_dir=(project_dir or PROJECT_DIR).resolve()))


@cli.command()
@click.argument("directory", type=PATH)
@click.option("--name", default=None,
              help="dbt project (and profile) name [the folder's name].")
@click.option("--deps/--no-deps", default=True, show_default=True,
              help="Run `dbt deps`, linking lakemirror's dbt package into the project.")
def init(directory: Path, name: str | None, deps: bool) -> None:
    """Create a dbt project in DIRECTORY, ready for `lakemirror run`: dbt_project.yml with
    lakemirror's block, packages.yml, profiles.yml with lakemirror's targets."""
    from lakemirror.project import init_project

    written = init_project(directory, name=name, deps=deps)
    click.echo("\n".join(f"wrote {path}" for path in written))
    click.echo(f"next: cd {directory} && lakemirror run --landing-zone DIR --warehouse DIR"
               + ("" if deps else " (after `dbt deps`)"))


@cli.command(name="package-path")
def package_path() -> None:
    """Print the folder of lakemirror's dbt package (a project's .lakemirror/dbt_package links
    to it)."""
    from lakemirror.project import dbt_package_dir

    click.echo(str(dbt_package_dir()))


def _service(landing_zone: Location, warehouse: Location, project_dir: Path | None,
             target: str, retention_days: float, lock_timeout: float, engine_timeout: float,
             quiet: bool, *, rebind: bool, confirm_drops: bool,
             max_drop_share: float) -> MirrorService:
    from lakemirror.run.log import silent
    from lakemirror.service import MirrorService, RunSettings

    env = cli_settings()
    settings = RunSettings.given(landing_zone, warehouse, project_dir, target=target, env=env,
                                 quiet=quiet, retention_days=retention_days,
                                 lock_timeout=lock_timeout, engine_timeout=engine_timeout,
                                 rebind_landing_zone=rebind, confirm_drops=confirm_drops,
                                 max_drop_share=max_drop_share)
    return MirrorService(settings, progress=silent if quiet
                         else lambda message: click.echo(message, err=True))


def main() -> None:
    cli()
