"""The warehouses a generated model is built for: one line of its yml.

dbt renders the line when it parses the project; the model and its staging source are enabled
only when LAKEMIRROR_WAREHOUSE (trailing `/` aside) is one of the listed warehouses:

    enabled: &lakemirror_warehouses "{{ (env_var('LAKEMIRROR_WAREHOUSE', '').rstrip('/') in
                                       ['/data/dev/warehouse']) | as_bool }}"

(on one line). The env var, not the var `lakemirror_warehouse`, because dbt hands yml the
var unrendered. The list is a YAML double-quoted scalar of printable ASCII holding a jinja
expression, so it reads back as a Python literal.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Collection
from pathlib import Path

from lakemirror.codegen.quoting import JINJA_SAFE, jinja_string, yaml_string

WAREHOUSE_VARIABLE = "LAKEMIRROR_WAREHOUSE"
WAREHOUSES_ANCHOR = "lakemirror_warehouses"
_PATH_SAFE = JINJA_SAFE | frozenset("/@~+=")  # none of them can end a literal or start jinja
_LINE = re.compile(rf"^(?P<lead>\s*enabled: &{WAREHOUSES_ANCHOR} )(?P<value>.*)$", re.MULTILINE)
_LIST = re.compile(r" in (\[.*\])\) \| as_bool \}\}$")


def warehouse_names(warehouse: Path) -> tuple[str, ...]:
    """The names dbt may see a warehouse by: its absolute path as given, and with links
    resolved (lakemirror's own runs pass the latter)."""
    given = os.path.abspath(warehouse)
    return tuple(sorted({_normal(given), _normal(str(Path(given).resolve()))}))


def warehouses_line(warehouses: Collection[str]) -> str:
    """The yml line (without indent) that enables a model for `warehouses` only."""
    return f"enabled: &{WAREHOUSES_ANCHOR} {_enabled(warehouses)}"


def read_warehouses(yml: Path) -> set[str] | None:
    """The warehouses a model's yml lists; None when it has no such line, or one that no
    longer reads back (then lakemirror leaves it as it is)."""
    match = _LINE.search(yml.read_text(encoding="utf-8"))
    if match is None:
        return None
    try:
        expression = ast.literal_eval(match.group("value").strip())
        listed = _LIST.search(expression) if isinstance(expression, str) else None
        names = ast.literal_eval(listed.group(1)) if listed else None
    except (SyntaxError, ValueError):
        return None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return None
    return normal_names(names)


def normal_names(warehouses: Collection[str]) -> set[str]:
    """Warehouse names as listed: without a trailing `/`."""
    return {_normal(name) for name in warehouses}


def replace_warehouses(yml: Path, warehouses: Collection[str]) -> bool:
    """List `warehouses` in the yml's line, keeping the rest of the file as it is (so also in
    a file the user edited); False when the file has no such line."""
    text = yml.read_text(encoding="utf-8")
    replaced, count = _LINE.subn(lambda match: match.group("lead") + _enabled(warehouses),
                                 text, count=1)
    if count and replaced != text:
        partial = yml.with_suffix(yml.suffix + ".partial")
        partial.write_text(replaced, encoding="utf-8")
        os.replace(partial, yml)
    return bool(count)


def without_warehouses(body: str) -> str:
    """`body` with its list of warehouses left out: what a generated file's checksum covers."""
    return _LINE.sub(lambda match: match.group("lead"), body)


def warehouse_condition(warehouses: Collection[str]) -> str:
    """A jinja expression (without braces), true when dbt runs for one of `warehouses`."""
    names = ", ".join(jinja_string(_normal(name), safe=_PATH_SAFE) for name in sorted(warehouses))
    return f"(env_var('{WAREHOUSE_VARIABLE}', '').rstrip('/') in [{names}])"


def _enabled(warehouses: Collection[str]) -> str:
    """The YAML value of the line: a jinja expression, true for the listed warehouses."""
    return yaml_string(f"{{{{ {warehouse_condition(warehouses)} | as_bool }}}}")


def _normal(name: str) -> str:
    return name.rstrip("/") or "/"
