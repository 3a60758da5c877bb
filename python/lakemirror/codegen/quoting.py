"""The door between landing-zone names and generated code: one quoting function per target
language. Names are data; written through these functions they can never become code."""

from __future__ import annotations

import string

JINJA_SAFE = frozenset(string.ascii_letters + string.digits + "_ .,:-")
YAML_SAFE = frozenset(map(chr, range(0x20, 0x7F))) - {'"', "\\"}


def sql_identifier(name: str) -> str:
    """`name` as a Spark SQL quoted identifier: in backticks, a backtick inside doubled
    (as the macro lakemirror.quote_identifier does)."""
    return "`" + name.replace("`", "``") + "`"


def datafusion_identifier(name: str) -> str:
    """`name` as a quoted identifier of delta-rs's SQL engine (DataFusion): in double quotes,
    a double quote inside doubled; quoted, its case is kept."""
    return '"' + name.replace('"', '""') + '"'


def jinja_string(value: str, *, safe: frozenset[str] = JINJA_SAFE) -> str:
    """`value` as a jinja string literal of `safe` characters only: any other character is a
    \\xNN, \\uNNNN or \\UNNNNNNNN escape, which jinja's lexer decodes back to it. So the literal
    holds no quote, brace, `%`, `#` or line break that could end it or start jinja code."""
    return "'" + "".join(_escaped(character, safe) for character in value) + "'"


def yaml_string(value: str) -> str:
    """`value` as a YAML double-quoted scalar of printable ASCII: any other character, and
    `"` and `\\`, is a \\xNN, \\uNNNN or \\UNNNNNNNN escape."""
    return '"' + "".join(_escaped(character, YAML_SAFE) for character in value) + '"'


def dbt_yaml_text(value: str) -> str:
    """A YAML value that dbt, which renders yml values as jinja, turns into exactly `value`."""
    return yaml_string("{{ " + jinja_string(value) + " }}")


def _escaped(character: str, safe: frozenset[str]) -> str:
    """The character itself when safe, else its escape (the same in jinja and YAML)."""
    if character in safe:
        return character
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
