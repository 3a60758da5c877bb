"""The package stays in rooms one can read at once: no function with more decisions, branches
or statements than pyproject.toml's [tool.ruff.lint] allows (ruff's C901, PLR0912, PLR0915:
counts that no reformatting changes, unlike lines), and no class over 200 lines."""

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "lakemirror"
MAX_CLASS_LINES = 200


def ruff_check(*paths: Path) -> list[dict[str, Any]]:
    """What `ruff check` finds in `paths` with the project's rules (ruff: the dev extra)."""
    pytest.importorskip("ruff", reason="ruff is not installed: pip install -e '.[dev]'")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "json",
         "--config", str(ROOT / "pyproject.toml"), *map(str, paths)],
        capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode in (0, 1), result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def test_no_function_is_too_complex():
    found = [f"{Path(entry['filename']).relative_to(PACKAGE)}:{entry['location']['row']}: "
             f"{entry['code']} {entry['message']}" for entry in ruff_check(PACKAGE)]
    assert found == [], "split these functions"


def test_the_complexity_check_catches_what_reformatting_would_hide(tmp_path):
    """The limits pyproject.toml sets (complexity 15, 12 branches, 50 statements) hold
    whatever the layout: ifs folded into walruses still count."""
    def ifs(count: int, test: str) -> str:
        return "".join(f"    if {test.format(n)}:\n        return {n}\n" for n in range(count))

    def additions(count: int) -> str:
        return "".join(f"    x += {n}\n" for n in range(count))

    code = tmp_path / "module.py"
    code.write_text(
        f"def decides(x):\n{ifs(16, 'x == {}')}    return x\n\n\n"
        f"def folds_with_walrus(x):\n{ifs(13, '(y := x + {}) == 0')}    return x\n\n\n"
        f"def states(x):\n{additions(51)}    return x\n\n\n"
        f"def at_the_limits(x):\n{ifs(12, 'x == {}')}{additions(38)}    return x\n")
    rows = {node.lineno: node.name for node in ast.parse(code.read_text()).body
            if isinstance(node, ast.FunctionDef)}
    assert sorted((rows[entry["location"]["row"]], entry["code"], entry["message"])
                  for entry in ruff_check(code)) == [
        ("decides", "C901", "`decides` is too complex (17 > 15)"),
        ("decides", "PLR0912", "Too many branches (16 > 12)"),
        ("folds_with_walrus", "PLR0912", "Too many branches (13 > 12)"),
        ("states", "PLR0915", "Too many statements (51 > 50)")]


def test_no_class_over_200_lines():
    large = [f"{path.relative_to(PACKAGE)}: {node.name} ({node.end_lineno - node.lineno + 1} "
             "lines)" for path in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ClassDef)
             and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES]
    assert large == []
