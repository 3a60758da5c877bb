"""The `connect` target against a real standalone Spark cluster behind a Spark Connect server
with Delta (tests/spark_cluster.py, one for the session): mirroring with the profile's
default threads, two warehouses on one server, a server that checks a token, and the failures
a user meets first."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from lakemirror.conflicts import ConflictKind
from lakemirror.engine import ChildEngine
from lakemirror.errors import ConfigError
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import Zone, as_multiset, copy_project, mirror_setup, mirrored_rows
from spark_cluster import TOKEN_VARIABLE, free_port

# Tests that use the cluster; the others need no server.
on_cluster = pytest.mark.usefixtures("connect")
pytestmark = pytest.mark.slow

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
BATCHES = [  # the first on a fresh warehouse; the second with every marker, keys changed twice
    [{"id": i, "v": f"v{i}", M: 0} for i in range(1, 5)],
    [{"id": 1, "v": "one", M: 1}, {"id": 2, "v": None, M: 2}, {"id": 5, "v": "e", M: 4},
     {"id": 2, "v": "back", M: 0}, {"id": 3, "v": None, M: 2}, {"id": 1, "v": "uno", M: 4}],
]
TABLES = ("Customers", "Sales.schema/Orders")


@pytest.fixture
def connect(spark_cluster, monkeypatch):
    """The cluster's Connect server for the connect target, its catalog emptied of an earlier
    test's tables."""
    spark_cluster.forget_tables()
    monkeypatch.setenv("LAKEMIRROR_CONNECT_URL", spark_cluster.connect_url)
    monkeypatch.delenv("LAKEMIRROR_THREADS", raising=False)  # the profile's default: 4
    return spark_cluster


@pytest.fixture
def sail_server():
    """A Sail server standing in for a Spark Connect server (no JVM), killed after the test."""
    server = ChildEngine()
    yield server
    server.kill()


def mirror_batches(root: Path) -> Path:
    """A two-table zone mirrored batch by batch on the connect target, each batch's tables
    compared with the reference model; returns the warehouse."""
    zone, service = mirror_setup(root, "connect")
    conflicts: list[str] = []
    service.progress = lambda line: conflicts.append(line) if "conflict" in line else None
    for folder in TABLES:
        zone.table(folder, ["id"])
    for number, _ in enumerate(BATCHES, start=1):
        for folder in TABLES:
            zone.write(folder, number, BATCHES[number - 1], SCHEMA)
        statuses = service.run()
        assert [status.status for status in statuses] == ["replicating"] * 2, statuses
        expected = [{k: v for k, v in row.items() if k != M}
                    for row in apply_changes(BATCHES[:number], ["id"])]
        for schema, table in (("dbo", "customers"), ("sales", "orders")):
            assert mirrored_rows(service.settings.warehouse, schema, table) == as_multiset(expected)
    assert not [line for line in conflicts if ConflictKind.CONCURRENT_APPEND.value in line]
    return service.settings.warehouse


@pytest.mark.spark
@on_cluster
def test_a_zone_mirrors_exactly_with_the_default_threads_quietly(tmp_path, recwarn):
    """Four threads on a fresh warehouse: models create the control tables at once (the loser
    is built again) and append their bookkeeping at once (never a conflict). dbt-spark's session
    cursor makes pyspark warn on every statement over Spark Connect: those stay quiet."""
    mirror_batches(tmp_path)
    assert not [warning for warning in recwarn
                if "catalogImplementation" in str(warning.message)]


def run_cli(tmp_path: Path, zone: Zone, command: list[str] | None = None,
            warehouse: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """`lakemirror run` (or `command` given its arguments) on the connect target in a new
    process, over a one-table zone, into `warehouse` (a folder of `tmp_path` by default)."""
    zone.table("Customers", ["id"])
    zone.write("Customers", 1, BATCHES[0], SCHEMA)
    return subprocess.run(
        [*(command or [str(Path(sys.executable).parent / "lakemirror")]), "run", "--target", "connect",
         "--landing-zone", str(zone.root), "--warehouse", warehouse or str(tmp_path / "wh"),
         "--project-dir", str(copy_project(tmp_path / "project"))],
        env={**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"), **env},
        capture_output=True, text=True, timeout=240)


# `lakemirror run` with its Connect server killed when dbt starts a model (a dbt callback):
# the server lost mid-run, after queries ran on it, with statements and releases under way.
KILL_SERVER_MID_RUN = """
import os, signal, sys
from dbt.cli import main as dbt_main
from lakemirror.cli import main

runner = dbt_main.dbtRunner

def killing_runner(*args, callbacks=(), **kwargs):
    def kill(event):
        if event.info.name == "NodeExecuting":
            os.kill(int(os.environ["SERVER_PID"]), signal.SIGKILL)
    return runner(*args, callbacks=[*callbacks, kill], **kwargs)

dbt_main.dbtRunner = killing_runner
sys.argv = ["lakemirror", *sys.argv[1:]]
main()
"""


def test_a_server_lost_mid_run_fails_the_run_and_the_process_exits_in_bounded_time(
        tmp_path, zone, sail_server):
    """pyspark's client would retry the lost server for about ten minutes in each statement,
    then again at exit in its release threads (their ReleaseExecute calls). A Sail server stands
    in for the cluster's Connect server; the bound is a hang detector, not a timing."""
    server = sail_server
    started = time.monotonic()
    run = run_cli(tmp_path, zone, command=[sys.executable, "-c", KILL_SERVER_MID_RUN],
                  LAKEMIRROR_CONNECT_URL=server.url_with_token, SERVER_PID=str(server.pid),
                  LAKEMIRROR_CONNECT_TIMEOUT="5")
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert (f"the Spark Connect server at localhost:{server.address.port} stopped accepting "
            "connections while dbt worked on this run") in output, output
    assert time.monotonic() - started < 90


# A query on a lakemirror session whose server was killed, then the end of the process: the
# query fails after its bounded retries, leaving a ReleaseExecute call queued in pyspark's
# release threads, which the interpreter joins at exit.
QUERY_A_LOST_SERVER = """
import time
from lakemirror.engine import ChildEngine, connect_session
from lakemirror.environment import read_settings

engine = ChildEngine()
spark = connect_session(engine.address.url, timeout=read_settings().connect_timeout,
                        token=engine.token)
spark.sql("select 1").collect()
engine.kill()
try:
    spark.sql("select 2").collect()
except Exception as error:
    print("failed:", type(error).__name__)
print("done at", time.monotonic(), flush=True)
"""


def test_a_query_on_a_lost_server_fails_and_the_process_exits_without_its_releases():
    """With pyspark's own retries the query takes about ten minutes, and so does the exit;
    lakemirror's sessions fail the query after LAKEMIRROR_CONNECT_TIMEOUT seconds, and the
    exit drops the releases still queued (retried, they would take as long again)."""
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-c", QUERY_A_LOST_SERVER], capture_output=True,
                         text=True, timeout=150, env={**os.environ,
                                                      "LAKEMIRROR_CONNECT_TIMEOUT": "20"})
    ended = time.monotonic()
    assert run.returncode == 0 and "failed: RetriesExceeded" in run.stdout, run.stdout + run.stderr
    done = float(run.stdout.rsplit("done at", 1)[1])  # time.monotonic: one clock for all processes
    assert done - started < 60  # the query's retries: about 19 s
    assert ended - done < 10  # the exit: the queued release would retry about 19 s more


def test_an_unreachable_server_fails_the_run_in_bounded_time_naming_the_fix(tmp_path, zone):
    """Spark Connect's client would retry for about ten minutes without a word."""
    port = free_port()
    started = time.monotonic()
    run = run_cli(tmp_path, zone, LAKEMIRROR_CONNECT_URL=f"sc://127.0.0.1:{port}",
                  LAKEMIRROR_CONNECT_TIMEOUT="2")
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert (f"the Spark Connect server does not answer: nothing accepted a connection at "
            f"127.0.0.1:{port} in 2 s") in output
    assert "LAKEMIRROR_CONNECT_URL" in output and "LAKEMIRROR_CONNECT_TIMEOUT" in output
    assert time.monotonic() - started < 120


@pytest.mark.spark
def test_a_server_without_delta_is_named_with_the_servers_settings(tmp_path, zone, spark_cluster):
    """Not the spark target's hint, whose settings are the client's."""
    url = spark_cluster.connect_server("connect-without-delta", delta=False)
    run = run_cli(tmp_path, zone, LAKEMIRROR_CONNECT_URL=url)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert "the Spark server has no Delta Lake" in output, output
    assert "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in output
    assert "LAKEMIRROR_DELTA_JARS" not in output


@pytest.mark.spark
def test_a_server_without_the_stores_connector_stops_the_run_before_it_writes(
        tmp_path, zone, spark_cluster, s3_server):
    """The test cluster's server has no S3A connector (hadoop-aws is not downloadable here):
    a run into a warehouse on moto's S3 asks the server to read there first, and stops,
    naming the server, the warehouse and the jars, with nothing written."""
    prefix = s3_server.fresh_prefix("warehouse")
    run = run_cli(tmp_path, zone, warehouse=s3_server.url(prefix),
                  LAKEMIRROR_CONNECT_URL=spark_cluster.connect_url,
                  LAKEMIRROR_STORAGE_OPTIONS=json.dumps(dict(s3_server.options)))
    output = run.stdout + run.stderr
    assert run.returncode == 2, output
    assert (f"the Spark Connect server at {spark_cluster.connect_url} cannot reach the warehouse "
            f"{s3_server.url(prefix)}: it lacks Hadoop's S3A connector (hadoop-aws-") in output
    assert 'No FileSystem for scheme "s3"' in output and "nothing was written" in output
    assert "docs/pages/object-storage.md" in output and "JVM stacktrace" not in output
    assert not s3_server.store().list(prefix).collect()


@pytest.mark.spark
@on_cluster
def test_two_warehouses_on_one_server_each_with_its_schema_suffix(tmp_path, monkeypatch):
    """The server's catalog attaches lakemirror's names at the first warehouse's tables. A run
    for another warehouse under the same names stops before touching either, naming the fix;
    with a schema suffix of its own it mirrors exactly, and so does the first one after it."""
    first_zone, first = mirror_setup(tmp_path / "a", "connect")
    second_zone, second = mirror_setup(tmp_path / "b", "connect")
    for zone in (first_zone, second_zone):
        zone.table("Customers", ["id"])
        zone.write("Customers", 1, BATCHES[0], SCHEMA)
    assert [status.status for status in first.run()] == ["replicating"]
    with pytest.raises(ConfigError, match="LAKEMIRROR_SCHEMA_SUFFIX") as stopped:
        second.run()
    message = str(stopped.value)
    assert str(first.settings.warehouse) in message
    assert str(second.settings.warehouse) in message
    assert not (second.settings.warehouse / "dbo" / "customers").exists()
    monkeypatch.setenv("LAKEMIRROR_SCHEMA_SUFFIX", "_b")
    assert [status.status for status in second.run()] == ["replicating"]
    monkeypatch.delenv("LAKEMIRROR_SCHEMA_SUFFIX")
    first_zone.write("Customers", 2, BATCHES[1], SCHEMA)
    assert [status.status for status in first.run()] == ["replicating"]
    for warehouse, batches in ((first.settings.warehouse, 2), (second.settings.warehouse, 1)):
        expected = [{k: v for k, v in row.items() if k != M}
                    for row in apply_changes(BATCHES[:batches], ["id"])]
        assert mirrored_rows(warehouse, "dbo", "customers") == as_multiset(expected)


@pytest.mark.parametrize(("target", "names"), [
    ("connect", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension"),
    ("spark", "LAKEMIRROR_DELTA_JARS"),
])
def test_the_missing_delta_hint_names_where_delta_is_missing(target, names):
    """The spark target's jars are this process's; any other target's, its server's."""
    from lakemirror.engine.spark import missing_delta_hint

    assert names in (missing_delta_hint(
        "java.lang.ClassNotFoundException: org.apache.spark.sql.delta.catalog.DeltaCatalog",
        target) or "")
    server_error = "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: delta. SQLSTATE: 42K02"
    assert (missing_delta_hint(server_error, target) is None) is (target == "spark")


# A server's token, and wrong ones: none may reach any output or file of a run.
TOKEN = "lm-test-token-7f3a9c"
WRONG_TOKEN = "lm-wrong-token-42b8e1"


@pytest.fixture(scope="module")
def token_server(spark_cluster):
    """A Connect server with Delta on the test cluster that lets in only clients sending
    TOKEN (Spark's spark.connect.authenticate.token); its URL without the token."""
    return spark_cluster.connect_server("connect-with-token", delta=True, token=TOKEN)


def files_holding(root: Path, text: str) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and text.encode() in path.read_bytes()]


@pytest.mark.spark
def test_a_zone_mirrors_on_a_server_that_checks_a_token(tmp_path, zone, token_server):
    """The URL's `;token=` reaches the server (pyspark sends it in clear text to `localhost`
    alone), and no output or file of the run holds it."""
    port = token_server.rsplit(":", 1)[1]
    run = run_cli(tmp_path, zone, LAKEMIRROR_CONNECT_URL=f"sc://localhost:{port}/;token={TOKEN}")
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    expected = [{k: v for k, v in row.items() if k != M} for row in apply_changes(BATCHES[:1], ["id"])]
    assert mirrored_rows(tmp_path / "wh", "dbo", "customers") == as_multiset(expected)
    assert TOKEN not in output
    assert files_holding(tmp_path, TOKEN) == []


@pytest.mark.spark
@pytest.mark.parametrize(("query", "variables", "said"), [
    ("", {}, "No authentication token provided"),
    ("", {TOKEN_VARIABLE: WRONG_TOKEN}, "Invalid authentication token"),
], ids=["no-token", "wrong-token-in-variable"])  # a token in the URL: the run above
def test_a_server_refusing_the_token_stops_the_run_naming_where_it_goes(
        tmp_path, zone, token_server, query, variables, said):
    """Not dbt's bare gRPC error: the exit code of a configuration error, the server's word,
    and where the token goes; nothing mirrored, and the wrong token nowhere."""
    port = token_server.rsplit(":", 1)[1]
    run = run_cli(tmp_path, zone, LAKEMIRROR_CONNECT_URL=f"sc://localhost:{port}{query}",
                  **variables)
    output = run.stdout + run.stderr
    assert run.returncode == 2, output
    assert (f"the Spark Connect server at localhost:{port} refused the connection: {said} "
            "(LAKEMIRROR_CONNECT_URL, the server's token)") in output, output
    assert "`;token=` parameter" in output and TOKEN_VARIABLE in output
    assert WRONG_TOKEN not in output and files_holding(tmp_path, WRONG_TOKEN) == []
    assert not (tmp_path / "wh" / "dbo" / "customers").exists()


def test_a_token_for_a_server_without_tls_stops_the_run_at_once_naming_tls(
        tmp_path, zone, sail_server):
    """pyspark speaks TLS to a token's host unless it is named `localhost`; a server without
    TLS in front (a Sail server here) answers nothing it understands, and its retries would
    end in a bare RETRIES_EXCEEDED after LAKEMIRROR_CONNECT_TIMEOUT."""
    server = sail_server
    run = run_cli(tmp_path, zone, LAKEMIRROR_CONNECT_TIMEOUT="5",
                  LAKEMIRROR_CONNECT_URL=f"sc://127.0.0.1:{server.address.port}/;token={TOKEN}")
    output = run.stdout + run.stderr
    assert run.returncode == 2, output
    # the reason is OpenSSL's (the stand-in's front closes a connection that is not HTTP/2)
    assert re.search(rf"the Spark Connect server at 127\.0\.0\.1:{server.address.port} does not "
                     r"answer TLS \([A-Z_]+\), which pyspark speaks to it", output), output
    assert "put TLS in front of the server" in output and "sc://localhost:PORT" in output
    assert TOKEN not in output


def test_a_token_in_a_malformed_connect_url_is_never_printed(tmp_path, zone):
    """pyspark's own error quotes the URL's port with what follows it, token included, and
    dbt prints it: lakemirror's plugin stops dbt first, the token hidden."""
    port = free_port()
    run = run_cli(tmp_path, zone, LAKEMIRROR_CONNECT_URL=f"sc://127.0.0.1:{port};token={TOKEN}")
    output = run.stdout + run.stderr
    assert run.returncode == 2, output
    assert (f"LAKEMIRROR_CONNECT_URL=sc://127.0.0.1:{port};token=*** is not a Spark Connect URL"
            in output), output
    assert "sc://host:port/;token=<token>" in output and TOKEN not in output


def test_a_connect_urls_secrets_are_hidden_and_a_placeholder_stays():
    from lakemirror.storage.secrets import redact

    assert (redact(f"sc://h:15002/;user_id=me;token={TOKEN};x-api-key=k3y)'")
            == "sc://h:15002/;user_id=me;token=***;x-api-key=***)'")
    assert redact("as `;token=<token>` in the URL") == "as `;token=<token>` in the URL"
