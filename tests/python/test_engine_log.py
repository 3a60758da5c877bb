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
