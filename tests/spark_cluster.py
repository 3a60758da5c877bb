"""A standalone Spark cluster behind a Spark Connect server, on loopback, for the `connect`
target's tests: a master, one worker and a Connect server (the cluster's driver), started with
the pyspark package's own `spark-class` / `spark-submit`, Delta's jars from
LAKEMIRROR_DELTA_JARS, and stopped by process id.

About 18 s to ready and 2 GB resident: 256 MB master and worker daemons, 1 GB for the Connect
server's driver and for the executor. A second server on the same cluster without Delta's
extension (`delta=False`) shows what a user meets when their server lacks it; another, with a
token (Spark's static token authentication), what a protected server asks of its clients; each
further server takes 2 GB more (its driver and its executor).

A pytest plugin for both test roots (pyproject's addopts): its fixture `spark_cluster` starts
the cluster once for the session, for tests/python's connect tests and tests/dbt_adapter's
conformance subset alike.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lakemirror.engine import close_connect_sessions
from lakemirror.engine.spark import DELTA_JARS, spark_unavailable

# The worker's executor slots, one core and 1 GB each: one per Connect server (with Delta,
# without it, with a token); a server whose application gets none waits for one forever.
WORKER_SLOTS = 3
READY_SECONDS = 120  # a loaded 2-core machine; measured about 18 s when idle
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
DELTA_SETTINGS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# What the `spark` target sets for small tables (profiles/profiles.yml), set on the server here.
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"  # a Connect server's token, and pyspark's
SMALL_TABLE_SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.ui.enabled": "false",
}


def cluster_unavailable() -> str | None:
    """Why the test cluster cannot start here (no Java, no Delta jars), or None."""
    reason = spark_unavailable()
    if reason is None and not os.environ.get(DELTA_JARS):
        return f"the test cluster needs Delta's jars in a folder: set {DELTA_JARS}"
    return reason


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Cluster:
    """A running cluster: its master's URL, its Connect servers' URLs, and its processes."""

    logs: Path
    master: str = ""
    connect_url: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, name: str, command: list[str], memory: str, *,
              token: str | None = None) -> subprocess.Popen[bytes]:
        """Start one JVM with its output in logs/<name>.log, in its own process group; a
        Connect server given a `token` lets in only the clients that send it (given in its
        environment, where other users cannot read it, as they read a command line)."""
        environment = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_DAEMON_MEMORY": memory,
                       "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(self.logs),
                       "SPARK_WORKER_DIR": str(self.logs / "work")}
        environment.pop("SPARK_CONNECT_MODE_ENABLED", None)
        environment.pop(TOKEN_VARIABLE, None)
        if token is not None:
            environment[TOKEN_VARIABLE] = token
        with open(self.logs / f"{name}.log", "wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                       env=environment, start_new_session=True)
        self.processes.append(process)
        return process

    def connect_server(self, name: str, *, delta: bool, token: str | None = None) -> str:
        """Start a Connect server on this cluster (with Delta's extension and catalog, or
        without them; checking `token`, Spark's spark.connect.authenticate.token, when given)
        and return its sc:// URL (without the token) once it listens."""
        port = free_port()
        jars = ",".join(str(jar) for jar in sorted(Path(os.environ[DELTA_JARS]).glob("*.jar")))
        settings = {**SMALL_TABLE_SETTINGS, **(DELTA_SETTINGS if delta else {}),
                    "spark.connect.grpc.binding.address": "127.0.0.1",
                    "spark.connect.grpc.binding.port": str(port),
                    "spark.executor.memory": "1g", "spark.cores.max": "1",
                    "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
        conf = [argument for key, value in settings.items() for argument in ("--conf", f"{key}={value}")]
        process = self.start(name, [
            str(spark_home() / "bin" / "spark-submit"), "--class", CONNECT_SERVER,
            "--master", self.master, "--driver-memory", "1g", "--name", name,
            *(["--jars", jars] if delta else []), *conf, "spark-internal"], "1g", token=token)
        wait_until(lambda: listens(port), process, self.logs / f"{name}.log", f"{name} listens")
        return f"sc://127.0.0.1:{port}"

    def forget_tables(self) -> None:
        """Empty the Connect server's catalog of the tables and views an earlier test attached
        (their data stays): the tests' warehouses share lakemirror's schema names, and the
        server's catalog is shared by all its sessions."""
        from pyspark.sql import SparkSession

        from lakemirror.engine.spark import forget_tables

        session = SparkSession.builder.remote(self.connect_url).create()
        try:
            forget_tables(session)
        finally:
            session.stop()

    def stop(self) -> None:
        """Stop every process of the cluster by its id (each leads its own process group, so
        the JVM a launcher script started goes with it)."""
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def listens(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def workers_alive(ui_port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
            state = json.loads(answer.read())
    except (OSError, ValueError):
        return False
    return bool(state.get("aliveworkers"))


def wait_until(ready: Callable[[], bool], process: subprocess.Popen[bytes], log: Path,
               what: str) -> None:
    """Wait until `ready()`, failing with the log's tail when the process dies or time runs out."""
    deadline = time.monotonic() + READY_SECONDS
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"not ready ({what}); {log}:\n{tail}")
        time.sleep(0.5)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One standalone Spark cluster behind a Spark Connect server with Delta, for the session;
    skipped, with the reason, without Java or Delta's jars. This process's Connect sessions end
    before the cluster stops."""
    reason = cluster_unavailable()
    if reason is not None:
        pytest.skip(f"Spark cluster skipped: {reason}")
    with running_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        try:
            yield cluster
        finally:
            close_connect_sessions()  # none outlives the servers it talks to


@contextmanager
def running_cluster(logs: Path) -> Iterator[Cluster]:
    """A master, one worker and a Connect server with Delta, on free loopback ports."""
    logs.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(logs)
    spark_class = str(spark_home() / "bin" / "spark-class")
    try:
        port, ui_port = free_port(), free_port()
        cluster.master = f"spark://127.0.0.1:{port}"
        master = cluster.start("master", [
            spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(port), "--webui-port", str(ui_port)], "256m")
        wait_until(lambda: listens(port), master, logs / "master.log", "master listens")
        worker = cluster.start("worker", [
            spark_class, "org.apache.spark.deploy.worker.Worker", cluster.master,
            "--host", "127.0.0.1", "--webui-port", str(free_port()), "--cores", str(WORKER_SLOTS),
            "--memory", f"{WORKER_SLOTS}g"], "256m")
        wait_until(lambda: workers_alive(ui_port), worker, logs / "worker.log", "worker registered")
        cluster.connect_url = cluster.connect_server("connect", delta=True)
        yield cluster
    finally:
        cluster.stop()
