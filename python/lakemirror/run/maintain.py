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

# The words of lakemirror.optimize_clustered_tables' refusal on an engine without OPTIMIZE.
NO_OPTIMIZE = "has no OPTIMIZE"
# Delta's class for clustering on two or more columns, which a Delta jar built from source
# without its generated code lacks (NoClassDefFoundError).
HILBERT_MISSING = "HilbertStates"

if TYPE_CHECKING:
    from lakemirror.maintenance import Optimize


def maintain(settings: RunSettings, log: RunLog, names: list[str]) -> None:
    """Maintain the tables `names` (`schema.table`, their locks held) that are due; a failure
    is a warning: maintenance is housekeeping, and the run's outcome stands."""
    from lakemirror.maintenance import due_tables, maintain_tables

    try:
        due = due_tables(settings.warehouse, names, hours=settings.env.maintenance_hours)
        results = maintain_tables(settings.layout, due, optimize=engine_optimize(settings),
                                  progress=log.progress) if due else []
    except Exception as error:  # maintenance is housekeeping: the run's outcome stands
        log.warn(f"maintenance did not finish: {type(error).__name__}: {error}; "
                 "run `lakemirror maintain` to see why")
        return
    for result in results:
        for failure in result.failed:
            log.warn(f"maintenance of {result.schema}.{result.table}: {failure}")


def engine_optimize(settings: RunSettings) -> Optimize:
    """OPTIMIZE on the settings' target (`dbt run-operation
    lakemirror.optimize_clustered_tables`); raises StepSkipped on an engine without OPTIMIZE
    (the embedded engine), else EngineError with dbt's message when it fails."""
    from lakemirror.maintenance import StepSkipped
    from lakemirror.run.dbt import invoke_dbt

    def optimize(locations: Sequence[Location]) -> None:
        failed = [node for node in invoke_dbt(
            settings, "run-operation", "lakemirror.optimize_clustered_tables", "--args",
            json.dumps({"locations": [str(location) for location in locations]}))
            if node.failed]
        message = _without_java_frames(str(failed[0].message)) if failed else ""
        if NO_OPTIMIZE in message:
            raise StepSkipped(f"the {settings.target} target's engine has no OPTIMIZE; give "
                              "`lakemirror maintain` the spark or connect target (--target)")
        if HILBERT_MISSING in message:
            raise EngineError(
                "OPTIMIZE failed: this Delta Lake build lacks Hilbert-curve clustering "
                f"(class {HILBERT_MISSING}), which OPTIMIZE needs for a table clustered on two "
                "or more columns",
                hint="use a Delta Lake release jar (delta-spark from Maven Central), or "
                     "cluster the table on one column (cluster_by) and --full-refresh it")
        if failed:
            raise EngineError(f"OPTIMIZE failed: {message}", hint="see the engine's message")

    return optimize


def _without_java_frames(message: str) -> str:
    """The engine's message without the lines of its Java stack traces."""
    return "\n".join(line for line in message.splitlines()
                     if not line.strip().startswith(("at ", "... ", "Suppressed: ")))


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
