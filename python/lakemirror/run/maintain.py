"""The last phase of a run: maintain the healthy tables whose maintenance is due; and the
engine's OPTIMIZE, which reclusters the tables with liquid clustering, for `maintain`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lakemirror.environment import Settings
from lakemirror.errors import ConfigError, EngineError
from lakemirror.run.log import RunLog
from lakemirror.run.settings import RunSettings
from lakemirror.storage.location import Location

if TYPE_CHECKING:
    from lakemirror.maintenance import Optimize


def maintain(settings: RunSettings, log: RunLog, names: list[str]) -> None:
    """Maintain the tables `names` (`schema.table`, their locks held) that are due; a failure
    is a warning: maintenance is housekeeping, and the run's outcome stands."""
    from lakemirror.maintenance import due_tables, maintain_tables

    try:
        due = due_tables(settings.warehouse, names, hours=settings.env.maintenance_hours)
        if due:
            maintain_tables(settings.layout, due, optimize=engine_optimize(settings),
                            progress=log.progress)
    except Exception as error:  # maintenance is housekeeping: the run's outcome stands
        log.warn(f"maintenance did not finish: {type(error).__name__}: {error}; "
                 "run `lakemirror maintain` to see why")


def engine_optimize(settings: RunSettings) -> Optimize:
    """OPTIMIZE on the settings' target (`dbt run-operation
    lakemirror.optimize_clustered_tables`); raises EngineError with dbt's message when it
    fails (the embedded engine has no OPTIMIZE)."""
    from lakemirror.run.dbt import invoke_dbt

    def optimize(locations: Sequence[Location]) -> None:
        failed = [node for node in invoke_dbt(
            settings, "run-operation", "lakemirror.optimize_clustered_tables", "--args",
            json.dumps({"locations": [str(location) for location in locations]}))
            if node.failed]
        if failed:
            raise EngineError(f"OPTIMIZE failed: {failed[0].message}",
                              hint="see the engine's message above")

    return optimize


def target_settings(warehouse: Location, project_dir: Path | None, target: str,
                    env: Settings) -> RunSettings:
    """The settings of a run of the warehouse's landing zone on `target`, for `maintain`."""
    from lakemirror.binding import read_binding
    from lakemirror.staging import Warehouse
    from lakemirror.storage import parse_location

    binding = read_binding(Warehouse(warehouse).storage)
    if binding is None:
        raise ConfigError(f"the warehouse {warehouse} records no landing zone yet",
                          hint="run `lakemirror run` on it first")
    return RunSettings.given(parse_location(binding.zone.resolved, storage=env.storage),
                             warehouse, project_dir, target=target, env=env, quiet=True)
