"""`lakemirror status`: what the last runs recorded per table, for people, machines and
Prometheus."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from lakemirror.cli.locations import WAREHOUSE
from lakemirror.errors import ExitCode
from lakemirror.storage.location import Location


@click.command(name="status")
@click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder or URL [env LAKEMIRROR_WAREHOUSE].")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option("--prometheus", is_flag=True,
              help="Print the status in Prometheus's text format (for a Pushgateway).")
@click.option("--prometheus-file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, metavar="PATH",
              help="Write the Prometheus text format to PATH atomically, for node_exporter's "
                   "textfile collector (name it *.prom).")
@click.option("--stale-after", type=click.FloatRange(min=0), default=None,
              metavar="SECONDS", envvar="LAKEMIRROR_STALE_AFTER",
              help="A warehouse without a run for longer is stale (exit code 1) "
                   "[env LAKEMIRROR_STALE_AFTER; default 3600].")
def status(warehouse: Location, as_json: bool, prometheus: bool,
                 prometheus_file: Path | None, stale_after: float | None) -> None:
    """Per-table monitoring from the last runs: status, files pending and the age of the
    oldest, rows, latency, errors; and whether the warehouse is stale.

    Exit code 0 healthy, 1 a table failed or degraded or the warehouse is stale, 2 not a
    lakemirror warehouse.
    """
    from lakemirror.monitor.report import DEFAULT_STALE_AFTER, read_report, to_json, to_text
    from lakemirror.staging import Warehouse
    from lakemirror.storage.warehouse import warehouse_location

    if as_json and prometheus:
        raise click.UsageError("--json and --prometheus both print to stdout: choose one")
    report = read_report(Warehouse(warehouse_location(warehouse)),
                         stale_after=DEFAULT_STALE_AFTER if stale_after is None else stale_after,
                         now=datetime.now(timezone.utc))
    if prometheus or prometheus_file:
        from lakemirror.monitor.prometheus import exposition, write_textfile

        if prometheus_file is not None:
            write_textfile(report, prometheus_file)
        if prometheus:
            click.echo(exposition(report), nl=False)
    if as_json or not (prometheus or prometheus_file):
        click.echo(to_json(report) if as_json else to_text(report))
    sys.exit(ExitCode.FAILED if report.unhealthy else ExitCode.HEALTHY)
