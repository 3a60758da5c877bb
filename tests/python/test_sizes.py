"""The package stays in rooms one can read at once: no module over 400 lines unless its
docstring says why ("Long because ..."), and no class over 200 lines."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "lakemirror"
MAX_MODULE_LINES, MAX_CLASS_LINES, REASON = 400, 200, "Long because"


def modules() -> list[tuple[Path, ast.Module, int]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        found.append((path.relative_to(PACKAGE), ast.parse(text), len(text.splitlines())))
    return found


def test_no_module_over_400_lines_without_a_reason_at_its_top():
    long = [f"{path} ({lines} lines)" for path, tree, lines in modules()
            if lines > MAX_MODULE_LINES and REASON not in (ast.get_docstring(tree) or "")]
    assert long == [], f"split these modules, or say why at their top ({REASON} ...)"


def test_no_class_over_200_lines():
    large = [f"{path}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
             for path, tree, _ in modules() for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef)
             and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES]
    assert large == []
