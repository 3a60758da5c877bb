"""`lakemirror demo`: publish, mirror, publish more, mirror again, show the result."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from lakemirror.demo.publisher import Publisher, incremental_changes, initial_load
from lakemirror.engine import connect_session
from lakemirror.engine.access import owner_token
from lakemirror.service import PROJECT_DIR, MirrorService, RunSettings, engine_address
from lakemirror.environment import Settings
from lakemirror.status import to_text

SAMPLE_QUERY = """
select c.Name, c.Country, count(o.OrderID) as order_lines, coalesce(sum(o.Amount), 0) as amount
from delta.`{customers}` as c
left join delta.`{order_lines}` as o on o.CustomerID = c.CustomerID
group by c.Name, c.Country
order by amount desc
"""


def run_demo(directory: Path, *, echo: Callable[[str], None], env: Settings,
             project_dir: Path = PROJECT_DIR) -> int:
    """Run the demo in `directory` (recreated) with the settings `env`; returns the exit code."""
    shutil.rmtree(directory, ignore_errors=True)
    zone, warehouse = directory / "LandingZone", directory / "warehouse"
    publisher = Publisher(zone)
    service = MirrorService(RunSettings.given(zone, warehouse, project_dir,
                                              dbt_vars={"lakemirror_examples": True},
                                              env=env),
                            progress=echo)
    started = time.monotonic()
    echo(f"== publisher writes the initial load to {zone}")
    initial_load(publisher)
    service.run()
    echo("== publisher writes inserts, updates, deletes, upserts and a key change")
    incremental_changes(publisher)
    statuses = service.run()
    echo("\n== status\n" + to_text(statuses))
    echo("\n== sample query\n" + _sample_query(warehouse, env))
    echo(f"\ndemo finished in {time.monotonic() - started:.1f}s; warehouse: {warehouse}")
    return 1 if any(status.unhealthy for status in statuses) else 0


def _sample_query(warehouse: Path, env: Settings) -> str:
    sql = SAMPLE_QUERY.format(customers=warehouse / "dbo" / "customers",
                              order_lines=warehouse / "sales" / "orderlines")
    address = engine_address(env)
    spark = connect_session(address.url, timeout=env.connect_timeout,
                            token=owner_token(env.home, address.port))
    try:
        rows = spark.sql(sql).toArrow()
    finally:
        spark.stop()
    table: str = rows.to_pandas().to_string(index=False)
    return sql.strip() + "\n\n" + table
