"""The embedded engine's own log lines stay off stderr unless asked for (--debug, LAKEMIRROR_LOG)."""

import os
import subprocess
import sys

import pytest

START_AND_STOP = "from lakemirror.engine.sail import ChildEngine; ChildEngine().kill()"


def engine_stderr(**variables: str) -> str:
    env = {key: value for key, value in os.environ.items()
           if key not in ("LAKEMIRROR_LOG", "LAKEMIRROR_DEBUG")}
    started = subprocess.run([sys.executable, "-c", START_AND_STOP], env={**env, **variables},
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    return started.stderr


def test_the_engine_is_quiet_by_default():
    assert engine_stderr() == ""


@pytest.mark.parametrize("variable", ["LAKEMIRROR_LOG", "LAKEMIRROR_DEBUG"])
def test_the_engine_log_is_shown_when_asked_for(variable):
    assert "Spark Connect server" in engine_stderr(**{variable: "1"})


def test_the_in_process_engine_listens_on_the_port_set():
    """LAKEMIRROR_ENGINE_PORT sets the in-process engine's port too, not only the background
    engine's (without it, any free port: runs side by side never collide)."""
    from spark_cluster import free_port

    port = free_port()
    started = subprocess.run(
        [sys.executable, "-c", "from lakemirror.engine.sail import ChildEngine; "
         "engine = ChildEngine(); print(engine.address.port); engine.kill()"],
        env={**os.environ, "LAKEMIRROR_ENGINE_PORT": str(port)},
        capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    assert started.stdout.split() == [str(port)]
