"""The phases of a run whose dbt threads run statements side by side: each phase is wall time,
so they add up to the run's time, not to the statements' summed times."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lakemirror.bench.phases import PhaseClock

# (at, thread, event, SQL or elapsed seconds), the clock reading `at` when dbt sends the event.
EVENTS = [
    (1.0, "main", "SQLQuery", "select 1"),
    (1.0, "main", "SQLQueryStatus", 0.5),  # the first statement: engine_session
    (4.0, "Thread-1", "SQLQuery", "merge into dbo.a using ..."),
    (4.0, "Thread-2", "SQLQuery", "insert into _lakemirror_control.mirror_batches ..."),
    (9.0, "Thread-2", "SQLQueryStatus", 5.0),  # bookkeeping 4..9
    (9.0, "Thread-2", "SQLQuery", "merge into dbo.b using ..."),
    (10.0, "Thread-1", "SQLQueryStatus", 6.0),  # merge 4..10
    (12.0, "Thread-2", "SQLQueryStatus", 3.0),  # merge 9..12
]


def test_statements_side_by_side_count_once_in_wall_time():
    reading = [0.0]
    clock = PhaseClock(now=lambda: reading[0])
    clock.dbt_started()
    for at, thread, name, value in EVENTS:
        reading[0] = at
        data = SimpleNamespace(sql=value) if name == "SQLQuery" else SimpleNamespace(
            elapsed=value)
        clock.dbt_event(SimpleNamespace(info=SimpleNamespace(name=name, thread=thread),
                                        data=data))
    clock.add("dbt", 20.0)
    phases = clock.report(imports=1.0, total=20.0)
    assert phases["engine_session"] == pytest.approx(0.5)
    assert phases["merge"] == pytest.approx(8.0)  # 4..12 with a MERGE running, not 6 + 3
    assert phases["bookkeeping"] == pytest.approx(0.0)  # its 5 seconds ran beside a MERGE
    assert phases["dbt_other"] == pytest.approx(11.5)
