"""`lakemirror verify` and `lakemirror resync`: prove a mirror against its staged changes, and
repair one from a source snapshot."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from lakemirror.cli.engine import cli_settings
from lakemirror.cli.locations import WAREHOUSE
from lakemirror.errors import ExitCode
from lakemirror.storage.location import Location


@click.command(name="verify")
@click.argument("tables", nargs=-1, metavar="[SCHEMA.TABLE]...")
@click.option("--warehouse", type=WAREHOUSE, required=True, envvar="LAKEMIRROR_WAREHOUSE",
              help="Warehouse folder or URL [env LAKEMIRROR_WAREHOUSE].")
@click.option("--source-counts", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              default=None, metavar="FILE",
              help='The source\'s row counts, JSON: {"schema.table": ROWS} or '
                   '{"schema.table": {"rows": ROWS, "sequence": FILE_NUMBER}}.')
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              envvar="LAKEMIRROR_LOCK_TIMEOUT",
              help="Seconds to wait for tables a run is working on [env LAKEMIRROR_LOCK_TIMEOUT].")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def verify(tables: tuple[str, ...], warehouse: Location, source_counts: Path | None,
           lock_timeout: float, as_json: bool) -> None:
    """Prove each mirrored table (or the ones named) is exactly what its staged changes
    imply: a full replay compared with the table, every column of every row, and with its
    history table. Exit code 0 when every table matches, 1 when one differs."""
    from lakemirror.proof.report import to_json, to_text
    from lakemirror.proof.source_counts import read_source_counts
    from lakemirror.proof.verify import verify as verify_tables
    from lakemirror.storage.warehouse import warehouse_location

    env = cli_settings()
    counts = None if source_counts is None else {
        name.lower(): count for name, count in read_source_counts(
            source_counts.read_text(encoding="utf-8"), origin=str(source_counts)).items()}
    proofs = verify_tables(warehouse_location(warehouse), [name.lower() for name in tables],
                           source_counts=counts, lock_timeout=lock_timeout,
                           lease_seconds=env.lease_seconds,
                           progress=lambda message: click.echo(message, err=True))
    click.echo(to_json(proofs) if as_json else to_text(proofs))
    healthy = all(proof.status == "ok" for proof in proofs)
    sys.exit(ExitCode.HEALTHY if healthy else ExitCode.FAILED)
