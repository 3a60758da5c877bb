"""The package type-checks under mypy --strict (configured in pyproject.toml)."""

import subprocess
import sys

from conftest import REPO


def test_package_passes_mypy_strict():
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
