"""`lakemirror verify` and `lakemirror resync`: prove a mirror against its staged changes, and
repair one from a source snapshot."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import click

from lakemirror.cli.engine import cli_settings
from lakemirror.cli.locations import LOCATION, PATH, WAREHOUSE
from lakemirror.errors import ExitCode
from lakemirror.storage.location import Location


@click.command(name="verify")
@click.argument("tables", nargs=-1, metavar="[SCHEMA.TABLE]...")
@click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder or URL [env LAKEMIRROR_WAREHOUSE].")
@click.option("--source-counts", type=click.File(encoding="utf-8"), default=None, metavar="FILE",
              help='The source\'s row counts, JSON: {"schema.table": ROWS} or '
                   '{"schema.table": {"rows": ROWS, "sequence": FILE_NUMBER}}.')
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              envvar="LAKEMIRROR_LOCK_TIMEOUT",
              help="Seconds to wait for tables a run is working on [env LAKEMIRROR_LOCK_TIMEOUT].")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def verify(tables: tuple[str, ...], warehouse: Location, source_counts: TextIO | None,
           lock_timeout: float, as_json: bool) -> None:
    """Prove each mirrored table (or the ones named) is exactly what its staged changes
    imply: a full replay compared with the table, every column of every row, and with its
    history table. Exit code 0 when every table matches, 1 when one differs."""
    from lakemirror.proof.report import to_json, to_text
    from lakemirror.proof.source_counts import read_source_counts
    from lakemirror.proof.verify import verify as verify_tables
    from lakemirror.storage.warehouse import warehouse_location

    env = cli_settings()
    counts = None if source_counts is None else read_source_counts(
        source_counts, origin=source_counts.name)
    proofs = verify_tables(warehouse_location(warehouse), [name.lower() for name in tables],
                           source_counts=counts, lock_timeout=lock_timeout,
                           lease_seconds=env.lease_seconds,
                           progress=lambda message: click.echo(message, err=True))
    click.echo(to_json(proofs) if as_json else to_text(proofs))
    healthy = all(proof.status == "ok" for proof in proofs)
    sys.exit(ExitCode.HEALTHY if healthy else ExitCode.FAILED)


@click.command(name="resync")
@click.argument("table", metavar="SCHEMA.TABLE")
@click.option("--snapshot", required=True, metavar="PATH|URL",
              help="A full export of the source table: a Parquet or CSV file (with a header "
                   "line), or a folder of them, on disk or in object storage.")
@click.option("--landing-zone", type=LOCATION, required=True, envvar="LAKEMIRROR_LANDING_ZONE",
              help="Landing zone: a folder or a URL [env LAKEMIRROR_LANDING_ZONE].")
@click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder or URL [env LAKEMIRROR_WAREHOUSE].")
@click.option("--project-dir", type=PATH, default=None, envvar="LAKEMIRROR_PROJECT_DIR",
              help="dbt project (default: the current directory) [env LAKEMIRROR_PROJECT_DIR].")
@click.option("--target", default="embedded", show_default=True, envvar="LAKEMIRROR_TARGET",
              help="dbt target's name in the project's profiles [env LAKEMIRROR_TARGET].")
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              envvar="LAKEMIRROR_LOCK_TIMEOUT",
              help="Seconds to wait for tables a run is working on [env LAKEMIRROR_LOCK_TIMEOUT].")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def resync(table: str, snapshot: str, landing_zone: Location, warehouse: Location,
           project_dir: Path | None, target: str, lock_timeout: float, as_json: bool) -> None:
    """Make TABLE exactly the source's snapshot: keys it lacks are deleted, changed rows
    updated, new keys inserted, equal rows untouched, as one batch of changes after the last
    staged one, applied by a run of the table. Exit code 0 when the table is healthy after,
    3 when the snapshot does not fit the table (nothing is written then)."""
    from lakemirror.binding import check_binding, zone_identity
    from lakemirror.naming import qualified_name
    from lakemirror.proof.resync import Resynced, stage_snapshot
    from lakemirror.run.log import silent
    from lakemirror.service import MirrorService, RunSettings
    from lakemirror.storage import parse_location

    env, name = cli_settings(), table.lower()
    settings = RunSettings.given(landing_zone, warehouse, project_dir, target=target, env=env,
                                 quiet=as_json, lock_timeout=lock_timeout)
    progress = silent if as_json else lambda message: click.echo(message, err=True)
    check_binding(zone_identity(settings.given_zone), settings.zone, settings.layout)  # first
    staged = stage_snapshot(settings.layout, name, parse_location(snapshot, storage=env.storage),
                            lock_timeout=lock_timeout, lease_seconds=env.lease_seconds,
                            progress=progress)
    statuses = MirrorService(settings, progress=progress).run([name])  # applies the batch
    done = Resynced(staged, next((status for status in statuses
                                  if qualified_name(status.schema, status.table) == name), None))
    click.echo(done.to_json() if as_json else done.to_text())
    sys.exit(ExitCode.HEALTHY if done.ok else ExitCode.FAILED)
