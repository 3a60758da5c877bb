"""Plain dbt never waits silently on an engine that stopped answering: every call dbt's Spark
Connect session makes has a deadline (LAKEMIRROR_ENGINE_TIMEOUT, or the target's
spark.lakemirror.engine_timeout; generous by default, for long MERGEs), and past it dbt fails
naming `lakemirror engine restart`, which stops the engine and starts it again at its port."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent import futures
from pathlib import Path

import grpc
import psutil
import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.engine import background_process
from lakemirror.engine.access import save_token
from lakemirror.engine.deadline import Deadline
from lakemirror.engine.plain_dbt import engine_deadline
from lakemirror.engine.sail import EngineAddress
from lakemirror.environment import read_settings
from lakemirror.errors import ConfigError, EngineError

from conftest import copy_project
from spark_cluster import free_port

BIN = Path(sys.executable).parent
STREAMS = {"ExecutePlan", "ReattachExecute"}  # Spark Connect's calls answered by a stream


@pytest.fixture
def silent_engine():
    """A gRPC server on loopback that takes every Spark Connect call and answers none (until
    the test ends): an engine stuck under load. Yields its port."""
    release = threading.Event()

    def unanswered(request, context):
        release.wait(300)
        context.abort(grpc.StatusCode.UNAVAILABLE, "the test ended")

    def stream_unanswered(request, context):
        unanswered(request, context)
        yield b""

    class Handler(grpc.GenericRpcHandler):
        def service(self, details):
            if details.method.rsplit("/", 1)[-1] in STREAMS:
                return grpc.unary_stream_rpc_method_handler(stream_unanswered)
            return grpc.unary_unary_rpc_method_handler(unanswered)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers([Handler()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port
    release.set()
    server.stop(0)


def test_plain_dbt_fails_naming_engine_restart_when_the_engine_does_not_answer(tmp_path,
                                                                              silent_engine):
    project = copy_project(tmp_path / "project")
    (project / "models" / "one.sql").write_text("select 1 as id\n")
    save_token(tmp_path / "home", silent_engine, "stand-in")  # as an engine's start would
    run = subprocess.run(
        [str(BIN / "dbt"), "run", "--select", "one"], cwd=project, capture_output=True,
        text=True, timeout=240,  # without a deadline dbt would wait here until killed
        env={**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
             "LAKEMIRROR_ENGINE_PORT": str(silent_engine), "LAKEMIRROR_ENGINE_TIMEOUT": "2",
             "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
             "DBT_PROFILES_DIR": str(project / "profiles")})
    assert run.returncode != 0, run.stdout
    assert (f"the engine at 127.0.0.1:{silent_engine} did not answer a request within 2 s"
            in run.stdout), run.stdout + run.stderr
    assert "lakemirror engine restart" in run.stdout


class Passed(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.DEADLINE_EXCEEDED


class Call:
    """What gRPC's continuation gives: a unary answer (result) or a stream (iteration)."""

    def __init__(self, error=None):
        self.error = error

    def result(self, timeout=None):
        if self.error:
            raise self.error
        return "answer"

    def __iter__(self):
        return self

    def __next__(self):
        if self.error:
            raise self.error
        raise StopIteration

    def cancel(self):
        return True


def test_a_call_past_its_deadline_fails_and_every_later_call_at_once():
    deadline = Deadline(7.0, "127.0.0.1:1", "restart it")
    given = []

    def continuation(details, request):
        given.append(details.timeout)
        return Call(Passed() if request == "stuck" else None)

    details = grpc_details(None)
    assert deadline.intercept_unary_unary(continuation, details, "ok").result() == "answer"
    assert list(deadline.intercept_unary_stream(continuation, details, "ok")) == []
    assert deadline.intercept_unary_unary(continuation, details, "ok").cancel()  # the call's own
    stuck = deadline.intercept_unary_stream(continuation, details, "stuck")
    with pytest.raises(EngineError, match="did not answer a request within 7 s") as passed:
        next(stuck)
    assert "Fix: restart it" in str(passed.value)
    with pytest.raises(EngineError):
        deadline.intercept_unary_unary(continuation, details, "ok")
    assert given == [7.0, 7.0, 7.0, 7.0]  # the later call never reached the server
    mine = Deadline(7.0, "127.0.0.1:1", "restart it")
    assert mine.intercept_unary_unary(continuation, grpc_details(1.5), "ok") is not None
    assert given[-1] == 1.5  # a caller's own deadline is kept


def grpc_details(timeout):
    from lakemirror.engine.deadline import _Details

    return _Details("/spark.connect.SparkConnectService/Config", timeout, None, None, None, None)


def test_the_deadline_comes_from_the_target_over_the_variable_and_names_the_fix():
    embedded = {"spark.remote": "sc://127.0.0.1:5", "spark.lakemirror.engine": "embedded"}
    env = read_settings({"LAKEMIRROR_ENGINE_TIMEOUT": "900"})
    address = EngineAddress("127.0.0.1", 5)
    assert read_settings({}).engine_timeout == 3600
    assert engine_deadline(embedded, env, address).seconds == 900
    target = {**embedded, "spark.lakemirror.engine_timeout": "7200"}
    assert engine_deadline(target, env, address).seconds == 7200
    assert "lakemirror engine restart" in engine_deadline(embedded, env, address).fix
    remote = {**embedded, "spark.lakemirror.engine": "connect"}
    assert "check the Spark Connect server at 127.0.0.1:5" in engine_deadline(
        remote, env, address).fix
    for bad in ("0", "soon"):
        with pytest.raises(ConfigError, match="LAKEMIRROR_ENGINE_TIMEOUT"):
            read_settings({"LAKEMIRROR_ENGINE_TIMEOUT": bad})
        with pytest.raises(ConfigError, match="spark.lakemirror.engine_timeout"):
            engine_deadline({**embedded, "spark.lakemirror.engine_timeout": bad}, env, address)


@pytest.mark.slow
def test_engine_restart_starts_the_engine_again_at_its_port(tmp_path):
    env = {"LAKEMIRROR_HOME": str(tmp_path / "home"), "LAKEMIRROR_PROJECT_DIR": str(tmp_path),
           "LAKEMIRROR_ENGINE_PORT": None, "LAKEMIRROR_WAREHOUSE": None}
    port = free_port()
    try:
        started = CliRunner().invoke(cli, ["engine", "start", "--port", str(port)], env=env)
        assert started.exit_code == 0, started.output
        first = background_process(tmp_path / "home")
        restarted = CliRunner().invoke(cli, ["engine", "restart"], env=env)
        assert restarted.exit_code == 0, restarted.output
        assert "engine stopped" in restarted.output
        assert f"engine running at sc://localhost:{port}" in restarted.output
        second = background_process(tmp_path / "home")
        assert second.address.port == port and second.process.pid != first.process.pid
        assert not psutil.pid_exists(first.process.pid) or not first.alive()
    finally:
        CliRunner().invoke(cli, ["engine", "stop"], env=env)
