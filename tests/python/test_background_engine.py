"""The background engine is known by its process, not by a pid alone: a state file naming a
process that is not the engine (a pid reused since) or naming nothing readable is no engine,
and stopping the engine ends it even when it ignores SIGTERM. It belongs to the project it was
started for: `engine stop` from another project sharing LAKEMIRROR_HOME leaves it running. Stand-in engines here are small
Python processes that listen on a port, as Sail does."""

import json
import subprocess
import sys

import psutil
import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.engine import background_engine, background_process, stop_background
from lakemirror.engine.sail import background_storage, state_file

# Listens on a free port and prints it; on SIGTERM prints "SIGTERM", then exits ("obey") or
# carries on ("ignore").
STAND_IN = """
import signal, socket, sys, time
def on_sigterm(*_):
    print("SIGTERM", flush=True)
    if sys.argv[1] == "obey":
        sys.exit(0)
signal.signal(signal.SIGTERM, on_sigterm)
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
print(server.getsockname()[1], flush=True)
time.sleep(120)
"""


@pytest.fixture
def stand_in():
    """Starts stand-in engines (`stand_in(sigterm)`, "ignore" or "obey"): (process, port)."""
    started = []

    def start(sigterm: str) -> tuple[subprocess.Popen, int]:
        process = subprocess.Popen([sys.executable, "-c", STAND_IN, sigterm],
                                   stdout=subprocess.PIPE, text=True)
        started.append(process)
        return process, int(process.stdout.readline())
    yield start
    for process in started:
        process.kill()
        process.wait()


def record(home, pid: int, started: float, port: int, *, storage: str = "s",
           project: str | None = None) -> None:
    home.mkdir(exist_ok=True)
    state_file(home).write_text(json.dumps({"pid": pid, "started": started,
                                            "host": "127.0.0.1", "port": port,
                                            "storage": storage, "project": project}))


def test_the_recorded_engine_is_found_and_stopped_with_sigterm(tmp_path, stand_in):
    engine, port = stand_in("obey")
    record(tmp_path, engine.pid, psutil.Process(engine.pid).create_time(), port)
    assert background_engine(tmp_path).port == port
    assert background_storage(tmp_path) == "s"
    assert background_process(tmp_path).alive()
    assert stop_background(tmp_path)
    assert not psutil.pid_exists(engine.pid) and engine.stdout.read() == "SIGTERM\n"
    assert not state_file(tmp_path).exists()


def test_a_pid_now_another_programs_is_no_engine_and_is_never_signalled(tmp_path, stand_in):
    """The engine ended and its pid went to another program: the state file's start time tells
    them apart, though the pid runs and something answers at the port."""
    other, port = stand_in("obey")
    record(tmp_path, other.pid, psutil.Process(other.pid).create_time() - 60, port)
    assert background_engine(tmp_path) is None
    assert background_process(tmp_path) is None
    assert background_storage(tmp_path) is None
    assert not stop_background(tmp_path)
    assert other.poll() is None  # still running: no signal reached it
    assert not state_file(tmp_path).exists()


@pytest.mark.parametrize("content", [
    "{not json", "[]", "null", json.dumps({"host": "127.0.0.1", "port": 1}),
    json.dumps({"pid": "one", "started": 0, "host": "127.0.0.1", "port": 1}),
    json.dumps({"pid": 1, "host": "127.0.0.1", "port": 1}),  # an older lakemirror's: no start
])
def test_an_unreadable_state_file_names_no_engine_and_stop_removes_it(tmp_path, content):
    state_file(tmp_path).write_text(content)
    assert background_engine(tmp_path) is None and background_process(tmp_path) is None
    env = {"LAKEMIRROR_HOME": str(tmp_path)}
    status = CliRunner().invoke(cli, ["engine", "status"], env=env, catch_exceptions=False)
    assert (status.exit_code, status.output) == (1, "engine not running\n")
    stop = CliRunner().invoke(cli, ["engine", "stop"], env=env, catch_exceptions=False)
    assert (stop.exit_code, stop.output) == (0, "no engine was running\n")
    assert not state_file(tmp_path).exists()


def test_an_engine_that_ignores_sigterm_is_killed_after_the_timeout(tmp_path, stand_in):
    engine, port = stand_in("ignore")
    record(tmp_path, engine.pid, psutil.Process(engine.pid).create_time(), port)
    assert stop_background(tmp_path, timeout=0.5)
    assert not psutil.pid_exists(engine.pid) and engine.stdout.read() == "SIGTERM\n"
    assert not state_file(tmp_path).exists()


def test_engine_stop_in_a_second_project_leaves_the_first_ones_engine_running(tmp_path, stand_in):
    """Two dbt projects share LAKEMIRROR_HOME; the engine was started for `first`. `stop` in
    `second` is refused, naming `first`; `status` and `start` in `second` name it too; `stop`
    for `first` (here by --project-dir, as from its folder) ends it."""
    engine, port = stand_in("obey")
    home, first, second = tmp_path / "home", tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    record(home, engine.pid, psutil.Process(engine.pid).create_time(), port, storage="",
           project=str(first))

    def lakemirror(*args, project):
        return CliRunner().invoke(cli, ["engine", *args], env={
            "LAKEMIRROR_HOME": str(home), "LAKEMIRROR_PROJECT_DIR": str(project),
            "LAKEMIRROR_WAREHOUSE": None})

    refused = lakemirror("stop", project=second)
    assert refused.exit_code == 2, refused.output
    assert f"started for the project {first}" in refused.output and "left running" in refused.output
    assert f"--project-dir {first}" in refused.output
    assert engine.poll() is None and background_engine(home).port == port
    status = lakemirror("status", project=second)
    assert status.exit_code == 0 and f"(started for the project {first})" in status.output
    joined = lakemirror("start", "--port", str(port), project=second)
    assert joined.exit_code == 0 and "already in use" not in joined.output, joined.output
    assert f"started for the project {first}" in joined.output and engine.poll() is None
    stopped = lakemirror("stop", project=first)
    assert (stopped.exit_code, stopped.output) == (0, "engine stopped\n")
    assert engine.wait(timeout=10) == 0 and not state_file(home).exists()
