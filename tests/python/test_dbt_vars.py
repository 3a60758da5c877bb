"""A run hands dbt its data (the warehouse, its name, the engine's address) as `--vars`, never
through this process's environment, which two runs in one process would share (issue 40)."""

import json
import os

import pyarrow as pa
from dbt.cli import main as dbt_main

from lakemirror.dbt_vars import (
    ENGINE_HOME_VAR,
    ENGINE_HOST_VAR,
    ENGINE_PORT_VAR,
    WAREHOUSE_NAME_VAR,
    WAREHOUSE_VAR,
)
from lakemirror.delta.known_states import STATES_VAR
from lakemirror.engine.plain_dbt import invocation_settings
from lakemirror.engine.sail import EngineAddress, answers
from lakemirror.environment import read_settings
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import as_multiset, mirror_setup, mirrored_rows

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
ROWS = [{"id": key, "v": f"v{key}", M: 0} for key in range(3)]
PYSPARK_MARK = "SPARK_CONNECT_MODE_ENABLED"


def without_pyspark_mark(environ):
    return {name: value for name, value in environ.items() if name != PYSPARK_MARK}


def test_a_run_hands_dbt_its_data_as_vars_and_leaves_the_environment_alone(tmp_path,
                                                                          monkeypatch):
    zone, service = mirror_setup(tmp_path)
    zone.table("Customers", ["id"])
    zone.write("Customers", 1, ROWS, SCHEMA)
    # The run's engine listens at LAKEMIRROR_ENGINE_PORT's port, read into its settings: with
    # the variable gone, plain dbt's fallback would look for it at 50051.
    for name in ("LAKEMIRROR_WAREHOUSE", "LAKEMIRROR_WAREHOUSE_NAME", "LAKEMIRROR_ENGINE_HOST",
                 "LAKEMIRROR_ENGINE_PORT"):
        monkeypatch.delenv(name, raising=False)
    # pyspark's own mark of a process that made a Connect session (an earlier test's), which
    # lakemirror clears before each dbt invocation (engine/spark.prepare_spark_session)
    monkeypatch.setenv(PYSPARK_MARK, "1")
    environment = without_pyspark_mark(os.environ)
    invocations = []

    class RecordingRunner(dbt_main.dbtRunner):
        def invoke(self, args, **kwargs):
            invocations.append((args, without_pyspark_mark(os.environ)))
            return super().invoke(args, **kwargs)

    monkeypatch.setattr(dbt_main, "dbtRunner", RecordingRunner)
    statuses = service.run()

    assert [(status.table, status.status) for status in statuses] == [
        ("customers", "replicating")]
    assert mirrored_rows(service.settings.warehouse, "dbo", "customers") == as_multiset(
        apply_changes([ROWS], ["id"]))
    assert [args[0] for args, _ in invocations] == ["parse", "build"]
    assert all(seen == environment for _, seen in invocations)
    parse, build = (json.loads(args[args.index("--vars") + 1]) for args, _ in invocations)
    run = {WAREHOUSE_VAR: str(service.settings.warehouse), WAREHOUSE_NAME_VAR: "default"}
    # the engine's address, which changes between processes, never makes dbt parse again
    assert parse == run
    port = build.pop(ENGINE_PORT_VAR)
    # where the run's engine keeps its token, for lakemirror's dbt plugin
    assert build.pop(ENGINE_HOME_VAR) == str(service.settings.env.home)
    # and the Delta states the service read, a run-only var too (none: the table is new)
    assert build == {**run, ENGINE_HOST_VAR: "127.0.0.1", STATES_VAR: {}}
    # LAKEMIRROR_ENGINE_PORT's port when set (read into the settings), else the free one the
    # run's engine took: the engine dbt ran on answers there
    assert port == (service.settings.env.engine_port or port) and port > 0
    assert answers(EngineAddress("127.0.0.1", port))


def test_the_dbt_plugin_takes_the_warehouse_from_the_vars_before_the_environment():
    """The plugin checks the background engine's storage (and starts the `spark` target's
    session) for the warehouse of the command dbt runs: a run's var, else plain dbt's env var."""
    env = read_settings({"LAKEMIRROR_WAREHOUSE": "/plain/warehouse"})
    assert invocation_settings(env, {WAREHOUSE_VAR: "s3://lake/run"}).warehouse == "s3://lake/run"
    assert invocation_settings(env, {"other": "x"}).warehouse == "/plain/warehouse"
