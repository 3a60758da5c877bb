"""tests/ci_strict.py: with CI=true a skipped test fails the run, naming the skip's reason;
without CI it stays a skip. Strict xfails are not skips."""

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SAMPLE = '''
import pytest

def test_passes():
    assert True

@pytest.mark.skipif(True, reason="no Java here")
def test_needs_java():
    pass

@pytest.mark.ci_skip_allowed
def test_needs_a_connector():
    pytest.skip("no connector here")

@pytest.mark.xfail(strict=True, reason="an engine limit")
def test_engine_limit():
    assert False
'''


def run_sample(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = {**os.environ, "CI": ci, "PYTHONPATH": os.pathsep.join(
        [str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "ci_strict", "-q",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           str(tmp_path / "test_sample.py")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_skip_fails_in_ci_with_its_reason(tmp_path):
    result = run_sample(tmp_path, "true")
    assert result.returncode == 1, result.stdout
    assert "1 passed, 1 skipped, 1 xfailed, 1 error" in result.stdout  # skipif: in setup
    assert "Skip reason: no Java here" in result.stdout


def test_a_skip_stays_a_skip_outside_ci(tmp_path):
    result = run_sample(tmp_path, "")
    assert result.returncode == 0, result.stdout
    assert "1 passed, 2 skipped, 1 xfailed" in result.stdout


def test_a_second_test_allowed_to_skip_is_refused(tmp_path):
    (tmp_path / "test_two.py").write_text(
        "import pytest\n\n@pytest.mark.ci_skip_allowed\ndef test_one():\n    pass\n\n"
        "@pytest.mark.ci_skip_allowed\ndef test_two():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "ci_strict", "-q", "-p",
                             "no:cacheprovider", "--rootdir", str(tmp_path),
                             str(tmp_path / "test_two.py")],
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "only one test may be marked ci_skip_allowed" in result.stdout + result.stderr
