"""The embedded engine's own log lines stay off stderr unless asked for (--debug, LAKEMIRROR_LOG)."""

import os
import subprocess
import sys

import pytest

# A run's engine, with the settings a run reads at its start.
START_AND_STOP = ("from lakemirror.run.dbt import embedded_engine; "
                  "from lakemirror.environment import read_settings; "
                  "address, engine = embedded_engine(env=read_settings()); "
                  "print(address.port); engine.kill()")


def start_and_stop(**variables: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("LAKEMIRROR_LOG", "LAKEMIRROR_DEBUG", "LAKEMIRROR_ENGINE_PORT")}
    started = subprocess.run([sys.executable, "-c", START_AND_STOP], env={**env, **variables},
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    return started


def test_the_engine_is_quiet_by_default():
    assert start_and_stop().stderr == ""


@pytest.mark.parametrize("variable", ["LAKEMIRROR_LOG", "LAKEMIRROR_DEBUG"])
def test_the_engine_log_is_shown_when_asked_for(variable):
    assert "Spark Connect server" in start_and_stop(**{variable: "1"}).stderr


def test_the_in_process_engine_listens_on_the_port_set():
    """LAKEMIRROR_ENGINE_PORT sets the in-process engine's port too, not only the background
    engine's (without it, any free port: runs side by side never collide)."""
    from spark_cluster import free_port

    port = free_port()
    started = start_and_stop(LAKEMIRROR_ENGINE_PORT=str(port))
    assert started.stdout.split() == [str(port)]
