"""Run dbt in-process (dbtRunner) and report the outcome of each node."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import timezone
from pathlib import Path
from typing import Any

from lakemirror.compiled_templates import reuse_compiled_templates
from lakemirror.dbt_vars import WAREHOUSE_VAR
from lakemirror.engine.connect import close_connect_sessions
from lakemirror.engine.identity import Engine
from lakemirror.engine.spark import missing_delta_hint, prepare_spark_session
from lakemirror.errors import (
    ConfigError,
    LakemirrorError,
    ProjectParseError,
    ServerStorageError,
)
from lakemirror.node_result import NodeResult
from lakemirror.parsed_projects import parse_project, parse_target, parsed_manifest
from lakemirror.environment import process_environment
from lakemirror.storage.hadoop import server_storage_problem


# dbt keeps its flags, adapters and invocation context process-wide: two runs' threads take
# turns at it.
_one_invocation_at_a_time = threading.RLock()
# A warm caller reruns every few seconds: it skips writing target/manifest.json and
# run_results.json (about 0.3 s each time, more on a busy machine), which it never reads.
WARM_ARGS = {True: ("--no-write-json",), False: ()}


def dbt_invoke(command: str, project_dir: Path, *, profiles_dir: Path, target: str,
               engine: Engine, warehouse: str,
               dbt_vars: Mapping[str, object] | None = None,
               run_vars: Mapping[str, object] | None = None,
               extra_args: tuple[str, ...] = (), warm: bool = False) -> list[NodeResult]:
    """Run `dbt <command>` on the dbt target named `target`, whose engine is `engine`, for the
    warehouse `warehouse` (as dbt is given it), and return per-node results; raises only if dbt
    could not start. Everything dbt is told goes as `--vars` (the warehouse as
    `lakemirror_warehouse`), never through this process's environment.
    `warm` (long-lived processes such as `run --watch`) keeps the project's parsed manifest,
    reused while no project file changes, and the engine session between invocations.
    `run_vars` are vars only the profile and the nodes' execution read (never a parse): the
    project is parsed without them first (dbt parses it all again when its vars change), and
    the command runs on that manifest, so they change from one invocation to the next (the
    engine's port) at no parse."""
    from dbt.cli.main import dbtRunner

    reuse_compiled_templates()
    if "--vars" in extra_args:  # dbt would take them in place of the run's own
        raise ValueError("give dbt_invoke vars as run_vars, not as --vars in extra_args")
    project = _project_args(project_dir, profiles_dir, target)
    parsed_with = {**(dbt_vars or {}), WAREHOUSE_VAR: warehouse}
    run_with = ["--vars", json.dumps({**parsed_with, **(run_vars or {})})]
    operation_errors: list[str] = []
    with _one_invocation_at_a_time:
        _release_sessions(warehouse, warm=warm)
        try:
            manifest = _parsed(project, parsed_with, project_dir, warm=warm,
                               log_level=_parse_log_level(extra_args))
            outcome = dbtRunner(manifest=manifest,
                                callbacks=[_operation_error_collector(operation_errors)]
                                ).invoke([command, *project, *run_with, *WARM_ARGS[warm],
                                          *_plain_log_into_files(), *extra_args])
        finally:
            if not warm:
                close_connect_sessions()
    if (stopped := _lakemirror_error(outcome.exception)) is not None:
        raise stopped
    if (unreachable := _server_storage_error(command, engine, warehouse,
                                             outcome.exception)) is not None:
        raise unreachable
    if (unparsed := _parse_error(command, outcome.exception)) is not None:
        raise unparsed
    if outcome.exception is not None:
        raise ConfigError(f"dbt {command} could not run: {outcome.exception}",
                          hint=(missing_delta_hint(str(outcome.exception), engine)
                                or "check the dbt project, profiles and target"))
    if outcome.result is None or not hasattr(outcome.result, "results"):
        raise ConfigError(f"dbt {command} failed before running any node",
                          hint="run dbt with --debug to see why")
    return [NodeResult(_unique_id(result), str(result.status),
                       result.message or _operation_error(result, operation_errors),
                       _depends_on(result), _completed_at(result))
            for result in outcome.result.results]


def parsed_project(project_dir: Path, *, profiles_dir: Path, target: str, warehouse: str,
                   dbt_vars: Mapping[str, object] | None = None, warm: bool = False
                   ) -> Any | None:
    """The project's manifest parsed as `dbt_invoke` parses it (None when dbt cannot parse
    the project), so that reading it costs the run no parse of its own: a warm caller's next
    invocation takes this manifest, a cold one's next parse finds nothing changed (dbt's
    partial parse)."""
    with _one_invocation_at_a_time:
        return _parsed(_project_args(project_dir, profiles_dir, target),
                       {**(dbt_vars or {}), WAREHOUSE_VAR: warehouse}, project_dir, warm=warm,
                       log_level="none")


def _project_args(project_dir: Path, profiles_dir: Path, target: str) -> list[str]:
    return ["--project-dir", str(project_dir), "--profiles-dir", str(profiles_dir),
            "--target", target]


def _parsed(project: list[str], parsed_with: Mapping[str, object], project_dir: Path, *,
            warm: bool, log_level: str) -> Any | None:
    """The manifest of the project parsed with the vars `parsed_with`: kept for a `warm`
    caller (see `parsed_manifest`), else parsed anew (a partial parse from the state dbt keeps
    for these vars, see `parse_target`), logging at `log_level`."""
    parse_vars = ["--vars", json.dumps(parsed_with)]
    own_state = parse_target(project_dir, project, parsed_with)
    if warm:
        return parsed_manifest([*project, *parse_vars, *own_state, "--log-level", "none"],
                               project_dir, (*project, *parse_vars))
    return parse_project([*project, *parse_vars, *own_state, "--no-write-json",
                          *_plain_log_into_files(), "--log-level", log_level])


def _parse_log_level(command_args: tuple[str, ...]) -> str:
    """The parse before a command logs its warnings only (the command logs the rest), and
    nothing when the command is to log nothing."""
    quiet = any(command_args[at:at + 2] == ("--log-level", "none")
                for at in range(len(command_args)))
    return "none" if quiet else "warn"


def _lakemirror_error(error: BaseException | None) -> LakemirrorError | None:
    """The error of lakemirror's dbt plugin that stopped dbt (dbt wraps it in its own)."""
    while error is not None and not isinstance(error, LakemirrorError):
        error = error.__cause__ or error.__context__
    return error


def _parse_error(command: str, error: BaseException | None) -> ProjectParseError | None:
    """The error to stop on when dbt could not parse the project's files (a node's Jinja or
    `ref`, a yml), naming the node dbt blames when it names one; None otherwise."""
    from dbt.exceptions import ParsingError
    from dbt_common.exceptions import CompilationError

    if not isinstance(error, (CompilationError, ParsingError)):
        return None
    node = getattr(getattr(error, "node", None), "unique_id", None)
    named = re.search(r"\b(?:model|seed|snapshot|test|analysis)\.[\w.-]+\w", str(error))
    return ProjectParseError(f"dbt {command} could not parse the project: {error}",
                             node=node or (named.group(0) if named else None),
                             hint="fix the file dbt names (`dbt parse` shows it)")


def _server_storage_error(command: str, engine: Engine, warehouse: str,
                          error: BaseException | None) -> ServerStorageError | None:
    """The error to stop on when dbt could not run because a Spark Connect server cannot
    reach the warehouse URL (its Java stack would otherwise be the only word, with the 'no
    Delta Lake' hint its Delta frames match); None otherwise."""
    if error is None or engine != "connect" or "://" not in warehouse:
        return None
    problem = server_storage_problem(str(error))
    if problem is None:
        return None
    return ServerStorageError(f"dbt {command} could not run: the Spark server cannot reach the "
                              f"warehouse: {problem.lacks}", hint=problem.fix)


def _operation_error_collector(errors: list[str]) -> Callable[[Any], None]:
    """A dbt event callback keeping the error of a failed run-operation, which dbt reports
    only as an event (its result carries no message)."""
    def collect(event: Any) -> None:
        if event.info.name in ("RunningOperationCaughtError", "RunningOperationUncaughtError"):
            errors.append(str(event.data.exc))
    return collect


def _operation_error(result: Any, errors: list[str]) -> str | None:
    return "; ".join(errors) if errors and str(result.status) == "error" else None


def _unique_id(result: Any) -> str:
    """The node's id: `build` results carry the node, `run-operation` results only its id."""
    node = getattr(result, "node", None)
    return str(node.unique_id if node is not None else result.unique_id)


def _depends_on(result: Any) -> tuple[str, ...]:
    """The nodes a result's node depends on (a test: the model it tests)."""
    node = getattr(result, "node", None)
    depends_on = getattr(node, "depends_on", None)
    return tuple(getattr(depends_on, "nodes", None) or ())


def _completed_at(result: Any) -> float | None:
    timings = [timing.completed_at for timing in getattr(result, "timing", None) or ()
               if getattr(timing, "completed_at", None) is not None]
    return max(timings).replace(tzinfo=timezone.utc).timestamp() if timings else None  # naive UTC


def _plain_log_into_files() -> tuple[str, ...]:
    """dbt colours its log even into a pipe or a file: plain text there, unless the user
    chose (DBT_USE_COLORS)."""
    if "DBT_USE_COLORS" in process_environment() or sys.stdout.isatty():
        return ()
    return ("--no-use-colors",)


# Whose engine sessions the last warm invocation kept. Process-wide on purpose, as what it
# describes: the sessions dbt-spark runs on are pyspark's, one active session per process (and
# one Connect session per server), which every dbt invocation of the process takes in turn.
_warm_warehouse: list[str | None] = [None]


def _release_sessions(warehouse: str | None, *, warm: bool) -> None:
    """Clear the engine sessions an earlier invocation left open (their catalog state would
    leak into this one), except those a warm caller keeps for the same warehouse: a warehouse
    never sees another's catalog, whatever the engine."""
    keep = warm and warehouse == _warm_warehouse[0]
    if not keep:
        close_connect_sessions()
    prepare_spark_session(warehouse, warm=keep)
    _warm_warehouse[0] = warehouse if warm else None


def forget_warm_sessions() -> None:
    """The next invocation starts from fresh engine sessions, which attach the registry anew:
    a kept session's catalog still lists a relation whose data went away."""
    _warm_warehouse[0] = None

