"""Where a lakemirror contender's run spends its time, measured inside its own process.

The bench times the run's steps from outside the runtime, so the runtime carries no timing
code: it wraps the functions the run calls (looked up at call time) and reads dbt's events
(each SQL statement and its elapsed time, the line dbt prints once the project is parsed).

Phases, in seconds: `imports` (the contender's start to the run's: imports, the service),
`discovery` (listing the landing zone), `staging` (reading and staging the files, generating
models), `dbt_parse` (importing dbt and its adapter, parsing the project, until it runs nodes;
less the engine's start in that time), `engine_session` (starting or reaching the engine, and
each dbt invocation's first statement, which opens its Spark Connect session), `merge` (the
statements that write the mirrored tables: each MERGE, or a first run's `create or replace
table`), `bookkeeping` (every other statement: batch claims and records, settings, catalog; and
the status and monitor records after dbt), `maintenance`, and `dbt_other` (dbt's own work
between statements: rendering, compiling, hooks). `total` is the run's wall time after
`imports`.
With several dbt threads, statements run side by side: `merge` is the wall time while some
MERGE ran, `bookkeeping` the time while only other statements ran, so the phases still add up
to `total`, not to the statements' summed times.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from types import ModuleType
from typing import Any

PHASES = ("imports", "discovery", "staging", "dbt_parse", "engine_session", "merge",
          "bookkeeping", "maintenance", "dbt_other", "total")
# The parts of dbt's time (`dbt`) measured apart; `dbt_other` is the rest.
_IN_DBT = ("dbt_parse", "engine_start", "first_statement", "merge", "statements")


class PhaseClock:
    """Seconds per phase of one process's run (see the module docstring)."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self._dbt_started: float | None = None
        self._engine_before = 0.0  # `engine_start` seconds when dbt started
        self._first_statement = False
        self._statements: dict[str, str] = {}  # thread → its last SQL text
        self._ran: dict[str, list[tuple[float, float]]] = {"merge": [], "statements": []}
        self._lock = threading.Lock()

    def add(self, phase: str, seconds: float) -> None:
        with self._lock:
            self.seconds[phase] += seconds

    def dbt_started(self) -> None:
        self._dbt_started = self._now()
        self._engine_before = self.seconds["engine_start"]
        self._first_statement = True

    def dbt_event(self, event: Any) -> None:
        """A dbt event callback: the end of dbt's parse, and each statement by kind."""
        name = event.info.name
        if name == "ConcurrencyLine" and self._dbt_started is not None:
            engine = self.seconds["engine_start"] - self._engine_before
            self.add("dbt_parse", self._now() - self._dbt_started - engine)
            self._dbt_started = None
        elif name == "SQLQuery":
            self._statements[event.info.thread] = str(event.data.sql)
        elif name == "SQLQueryStatus":
            sql = self._statements.pop(event.info.thread, "").lower()
            kind = ("first_statement" if self._first_statement
                    else "merge" if _writes_mirrored_table(sql) else "statements")
            self._first_statement = False
            if kind == "first_statement":
                self.add(kind, float(event.data.elapsed))
            else:
                ended = self._now()
                self._ran[kind].append((ended - float(event.data.elapsed), ended))

    def report(self, imports: float, total: float) -> dict[str, float]:
        """Every phase; `dbt_other` is dbt's time its parse and statements leave."""
        seconds = dict(self.seconds)
        seconds["merge"] = _wall_time(self._ran["merge"])
        seconds["statements"] = (_wall_time(self._ran["merge"] + self._ran["statements"])
                                 - seconds["merge"])
        phases = {
            **{phase: seconds.get(phase, 0.0) for phase in PHASES},
            "imports": imports, "total": total,
            "engine_session": seconds.get("engine_start", 0.0)
                              + seconds.get("first_statement", 0.0),
            "bookkeeping": seconds.get("bookkeeping", 0.0) + seconds.get("statements", 0.0),
            "dbt_other": max(0.0, seconds.get("dbt", 0.0)
                             - sum(seconds.get(part, 0.0) for part in _IN_DBT)),
        }
        return {phase: round(phases[phase], 4) for phase in PHASES}


def _wall_time(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one of the (start, end) intervals."""
    covered, reached = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reached:
            covered += end - max(start, reached)
            reached = end
    return covered


def _writes_mirrored_table(sql: str) -> bool:
    """Whether a statement writes a mirrored table (not one of lakemirror's control tables)."""
    for verb in ("merge into ", "create or replace table "):
        at = sql.find(verb)
        if at >= 0 and not sql[at + len(verb):].lstrip().startswith("_lakemirror"):
            return True
    return False


def _timed(clock: PhaseClock, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            clock.add(phase, time.perf_counter() - started)
    return timed


@contextmanager
def recorded_phases() -> Iterator[tuple[PhaseClock, Callable[..., Any]]]:
    """Within the block, time the run's phases into the clock it yields, with the dbt invoker
    to run the service with. dbt is imported by the run's first dbt invocation, as without
    the clock (its import counts in `dbt_parse`), and its runner then passes its events to
    the clock too."""
    from lakemirror import service
    from lakemirror.run import dbt as run_dbt
    from lakemirror.run import ingest, models, record, scope

    clock = PhaseClock()
    stack = ExitStack()

    def invoke(*args: Any, **kwargs: Any) -> Any:
        clock.dbt_started()
        started = time.perf_counter()
        try:
            import dbt.cli.main as dbt_main

            if not getattr(dbt_main.dbtRunner, "timed", False):
                stack.enter_context(_wrapped(dbt_main, "dbtRunner", _timed_runner(
                    dbt_main.dbtRunner, clock)))
            return dbt_invoke(*args, **kwargs)
        finally:
            clock.add("dbt", time.perf_counter() - started)

    dbt_invoke = run_dbt.invoke_dbt
    timed = [(scope, "discover_tables", "discovery"), (ingest, "ingest", "staging"),
             (models, "generate_models", "staging"), (run_dbt, "embedded_engine", "engine_start"),
             (record, "statuses", "bookkeeping"), (record, "record_run", "bookkeeping"),
             (service, "maintain", "maintenance")]
    with stack:
        for module, name, phase in timed:
            stack.enter_context(_wrapped(module, name, _timed(clock, phase,
                                                              getattr(module, name))))
        yield clock, invoke


def _timed_runner(runner: type, clock: PhaseClock) -> type:
    """dbt's runner class, passing its events to the clock too."""

    class TimedRunner(runner):  # type: ignore[misc]
        timed = True

        def __init__(self, manifest: Any = None, callbacks: Any = None) -> None:
            super().__init__(manifest=manifest, callbacks=[*(callbacks or []), clock.dbt_event])

    return TimedRunner


@contextmanager
def _wrapped(module: ModuleType, name: str, wrapper: Any) -> Iterator[None]:
    original = getattr(module, name)
    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, original)
