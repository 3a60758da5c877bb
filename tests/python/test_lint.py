"""`make lint`: sqlfluff passes on every SQL file of the project (macros and models), with the
repository's configuration (`.sqlfluff`, and `macros/.sqlfluff` for the macros)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_sql_file_passes_sqlfluff():
    files = sorted(str(path.relative_to(REPO)) for folder in ("macros", "models")
                   for path in (REPO / folder).rglob("*.sql"))
    assert len(files) > 40
    result = subprocess.run([str(Path(sys.executable).parent / "sqlfluff"), "lint", *files],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
