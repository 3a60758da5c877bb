"""The warehouses a generated model is built for: one line of its yml.

A warehouse is known to the project by a logical name, never by its path, so a project moves
between machines (and paths) unchanged. dbt renders the line when it parses the project; the
model and its staging source are enabled only when the warehouse's name is one of the listed
names: the var lakemirror_warehouse_name a lakemirror run gives dbt, else (plain dbt)
LAKEMIRROR_WAREHOUSE_NAME, `default` when unset:

    enabled: &lakemirror_warehouses "{{ (var('lakemirror_warehouse_name',
        env_var('LAKEMIRROR_WAREHOUSE_NAME', 'default')) in ['default']) | as_bool }}"

(on one line). Never a var of dbt_project.yml, which dbt would hand yml unrendered. The line is
found by its anchor and edited alone, so a yml you edited keeps the rest of its text; its value
is read as YAML (in whatever style you rewrote it), and the jinja list in it, of escaped string
literals, as a Python literal.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Collection
from pathlib import Path

from lakemirror.codegen.quoting import jinja_string, yaml_string
from lakemirror.dbt_vars import WAREHOUSE_NAME_VAR
from lakemirror.errors import ConfigError
from lakemirror.environment import DEFAULT_WAREHOUSE_NAME, WAREHOUSE_NAME

WAREHOUSES_ANCHOR = "lakemirror_warehouses"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")  # never a path: no `/`
_LINE = re.compile(rf"^(?P<lead>\s*enabled: &{WAREHOUSES_ANCHOR} )(?P<value>.*)$", re.MULTILINE)
_LIST = re.compile(r" in (\[.*\])\) \| as_bool \}\}$")


def checked_name(name: str) -> str:
    """`name` when it can name a warehouse (letters, digits, `_`, `.`, `-`), else ConfigError."""
    if not _NAME.fullmatch(name):
        raise ConfigError(f"{name!r} cannot name a warehouse ({WAREHOUSE_NAME})",
                          hint="use up to 64 letters, digits, '_', '.' or '-' (not a path), "
                               "e.g. dev or prod; the same name for lakemirror and plain dbt")
    return name


def warehouses_line(warehouses: Collection[str]) -> str:
    """The yml line (without indent) that enables a model for `warehouses` only."""
    return f"enabled: &{WAREHOUSES_ANCHOR} {_enabled(warehouses)}"


def read_warehouses(yml: Path) -> set[str] | None:
    """The warehouses a model's yml lists; None when it has no such line, or one that no
    longer reads back (then lakemirror leaves it as it is)."""
    match = _LINE.search(yml.read_text(encoding="utf-8"))
    if match is None:
        return None
    import yaml

    try:
        expression = yaml.load(match.group("value"),  # libyaml's loader: each run reads
                               Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # every yml
        listed = _LIST.search(expression) if isinstance(expression, str) else None
        names = ast.literal_eval(listed.group(1)) if listed else None
    except (yaml.YAMLError, SyntaxError, ValueError):
        return None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return None
    return set(names)


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
    names = ", ".join(jinja_string(name) for name in sorted(warehouses))
    return (f"(var('{WAREHOUSE_NAME_VAR}', env_var('{WAREHOUSE_NAME}', "
            f"'{DEFAULT_WAREHOUSE_NAME}')) in [{names}])")


def _enabled(warehouses: Collection[str]) -> str:
    """The YAML value of the line: a jinja expression, true for the listed warehouses."""
    return yaml_string(f"{{{{ {warehouse_condition(warehouses)} | as_bool }}}}")
