"""The dbt macros whose data Python defines, rendered from it so that the two cannot drift: the
contract's row markers (lakemirror.contract) and Delta's feature catalog and reader profiles
(lakemirror.delta). `python -m lakemirror.generated_macros [REPO]` rewrites the files; a test
checks that the committed ones equal the rendering."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lakemirror.codegen.quoting import jinja_string
from lakemirror.contract import REPLACING_MARKERS, RowMarker
from lakemirror.delta.features import FEATURES
from lakemirror.delta.readers import DEFAULT_READERS, PROFILES, deletion_vector_blockers

JinjaValue = None | bool | int | str | Sequence["JinjaValue"] | Mapping[str, "JinjaValue"]
LINE_WIDTH = 100  # sqlfluff's max_line_length


def jinja_literal(value: JinjaValue, indent: int = 0, first_line: int = 0) -> str:
    """`value` as a jinja literal; a list or dict that does not fit on its line (`first_line`
    characters already written there) puts its items on lines indented by `indent + 4`."""
    if value is None or isinstance(value, bool):
        return {None: "none", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return jinja_string(value)
    if isinstance(value, Mapping):
        brackets, items = "{}", [f"{jinja_string(key)}: " for key in value]
        values = list(value.values())
    else:
        brackets, items, values = "[]", ["" for _ in value], list(value)
    flat = ", ".join(prefix + jinja_literal(item) for prefix, item in zip(items, values))
    if first_line + len(flat) + 3 <= LINE_WIDTH:  # brackets, and a comma after
        return brackets[0] + flat + brackets[1]
    inner = indent + 4
    lines, line = [], ""
    for prefix, item in zip(items, values):
        text = prefix + jinja_literal(item, inner, inner + len(prefix)) + ","
        if "\n" in text or (line and inner + len(line) + 1 + len(text) > LINE_WIDTH):
            lines.append(line)
            line = ""
        line = f"{line} {text}" if line else text
    lines.append(line)
    body = "".join(f"\n{' ' * inner}{text}" for text in lines if text)
    return f"{brackets[0]}{body}\n{' ' * indent}{brackets[1]}"


def _constant_macro(name: str, source: str, description: str, value: JinjaValue) -> str:
    """A macro file whose one macro returns `value`, headed by where it comes from."""
    return (f"{{#-- {description}\n     Rendered from {source} by\n"
            f"     `python -m lakemirror.generated_macros`: edit it there. --#}}\n"
            f"{{% macro {name}() %}}\n"
            f"    {{{{ return({jinja_literal(value, 4, len('    {{ return('))}) }}}}\n"
            f"{{% endmacro %}}\n")


def row_marker_macro() -> str:
    """`row_marker('delete')` → 2: the `__rowMarker__` value of a change, by name."""
    markers = {marker.name.lower(): int(marker) for marker in RowMarker}
    return (
        "{#-- The __rowMarker__ value of a change: row_marker('insert'), 'update', 'delete' or\n"
        "     'upsert'. Rendered from python/lakemirror/contract.py by\n"
        "     `python -m lakemirror.generated_macros`: edit it there. --#}\n"
        "{% macro row_marker(change) %}\n"
        f"    {{%- set markers = {jinja_literal(markers, 4, 22)} -%}}\n"
        "    {%- if change not in markers -%}\n"
        "        {{ exceptions.raise_compiler_error('row_marker: unknown change ' ~ change\n"
        "            ~ '; use one of ' ~ markers.keys() | join(', ')) }}\n"
        "    {%- endif -%}\n"
        "    {{ return(markers[change]) }}\n"
        "{% endmacro %}\n")


def replacing_row_markers_macro() -> str:
    """The markers of changes that replace all of a key's rows, as a SQL list `(1, 2, 4)`."""
    markers = ", ".join(str(int(marker)) for marker in sorted(REPLACING_MARKERS))
    return (
        "{#-- The __rowMarker__ values of the changes that replace all of a key's rows (update,\n"
        "     delete, upsert), as a SQL list for `__rowMarker__ in (...)`. Rendered from\n"
        "     python/lakemirror/contract.py by\n"
        "     `python -m lakemirror.generated_macros`: edit it there. --#}\n"
        "{% macro replacing_row_markers() %}\n"
        f"    {{{{ return('({markers})') }}}}\n"
        "{% endmacro %}\n")


def delta_feature_catalog_macro() -> str:
    """The Delta table features lakemirror knows, by name."""
    catalog = {feature.name: {
        "kind": feature.kind, "reader": feature.min_reader_version,
        "writer": feature.min_writer_version, "property": feature.property,
        "value": feature.property_value, "droppable": feature.droppable,
    } for feature in FEATURES}
    return _constant_macro(
        "delta_feature_catalog", "python/lakemirror/delta/features.py",
        "Delta table features lakemirror knows, from Delta's protocol and Databricks' \"Delta\n"
        "     Lake feature compatibility and protocols\" table: whether readers must know it too\n"
        "     ('reader-writer') or only writers ('writer'), the lowest legacy protocol that\n"
        "     supports it (reader, writer; writer 7 means table features only), the property\n"
        "     that turns it on, and whether `ALTER TABLE ... DROP FEATURE` can remove it.",
        catalog)


def delta_reader_profiles_macro() -> str:
    """The default reader set and which profiles read a table with deletion vectors."""
    blockers = deletion_vector_blockers(PROFILES.values())
    return _constant_macro(
        "delta_reader_profiles", "python/lakemirror/delta/readers.py",
        "The reader profiles of `lakemirror doctor` as the macros need them: the default\n"
        "     reader set (the clients of today) and, per profile, whether it reads a table with\n"
        "     deletion vectors.",
        {"default": list(DEFAULT_READERS),
         "reads_deletion_vectors": {name: name not in blockers for name in PROFILES}})


GENERATED: dict[str, Callable[[], str]] = {
    "macros/mirror/row_marker.sql": row_marker_macro,
    "macros/mirror/replacing_row_markers.sql": replacing_row_markers_macro,
    "macros/delta/delta_feature_catalog.sql": delta_feature_catalog_macro,
    "macros/delta/delta_reader_profiles.sql": delta_reader_profiles_macro,
}


def write_macros(repo: Path) -> list[str]:
    """Render every generated macro file under `repo`; returns the files that changed."""
    changed = []
    for path, render in GENERATED.items():
        target = repo / path
        text = render()
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            changed.append(path)
    return changed


if __name__ == "__main__":
    for written in write_macros(Path(sys.argv[1] if len(sys.argv) > 1 else ".")):
        print(f"rewrote {written}")
