"""The macros rendered from Python (lakemirror.generated_macros) are committed up to date, and
evaluate in jinja to the Python values they come from."""

import jinja2
import pytest

from lakemirror.contract import MARKER_CHOICES, REPLACING_MARKERS, RowMarker
from lakemirror.delta.features import FEATURES
from lakemirror.delta.readers import DEFAULT_READERS, PROFILES, deletion_vector_blockers
from lakemirror.generated_macros import GENERATED, LINE_WIDTH, jinja_literal

from conftest import REPO


class Returned(Exception):
    """What a macro passed to dbt's `return`."""


class CompilerError(Exception):
    """A macro's exceptions.raise_compiler_error."""


def give_back(value):
    """dbt's `return`: it ends the macro with `value`."""
    raise Returned(value)


def raise_compiler_error(message):
    raise CompilerError(message)


def returned(path, call):
    """The value the macro call `call` returns, with the macros of `path` defined."""
    environment = jinja2.Environment()
    environment.globals["return"] = give_back
    environment.globals["exceptions"] = {"raise_compiler_error": raise_compiler_error}
    template = environment.from_string((REPO / path).read_text() + "{{ " + call + " }}")
    with pytest.raises(Returned) as caught:
        template.render()
    return caught.value.args[0]


@pytest.mark.parametrize("path", sorted(GENERATED))
def test_the_committed_macro_file_is_its_rendering(path):
    assert (REPO / path).read_text() == GENERATED[path](), (
        f"{path} is stale: run `python -m lakemirror.generated_macros`")


@pytest.mark.parametrize("path", sorted(GENERATED))
def test_generated_macro_lines_fit_sqlfluffs_width(path):
    assert max(len(line) for line in GENERATED[path]().splitlines()) <= LINE_WIDTH


def test_row_marker_gives_each_markers_value_and_refuses_an_unknown_change():
    path = "macros/mirror/row_marker.sql"
    assert {marker: returned(path, f"row_marker('{marker.name.lower()}')")
            for marker in RowMarker} == {marker: int(marker) for marker in RowMarker}
    with pytest.raises(CompilerError, match="unknown change merge; use one of insert, update"):
        returned(path, "row_marker('merge')")


def test_replacing_row_markers_is_the_sql_list_of_update_delete_and_upsert():
    assert returned("macros/mirror/replacing_row_markers.sql",
                    "replacing_row_markers()") == "(1, 2, 4)"
    assert REPLACING_MARKERS == {RowMarker.UPDATE, RowMarker.DELETE, RowMarker.UPSERT}
    assert MARKER_CHOICES == "0 (insert), 1 (update), 2 (delete) or 4 (upsert)"


def test_the_feature_catalog_macro_holds_the_python_catalog():
    assert returned("macros/delta/delta_feature_catalog.sql", "delta_feature_catalog()") == {
        feature.name: {"kind": feature.kind, "reader": feature.min_reader_version,
                       "writer": feature.min_writer_version, "property": feature.property,
                       "value": feature.property_value, "droppable": feature.droppable}
        for feature in FEATURES}


def test_the_reader_profiles_macro_holds_the_python_profiles():
    blockers = deletion_vector_blockers(PROFILES.values())
    assert "delta-rs-pyarrow" in blockers and "delta-4.0" not in blockers
    assert returned("macros/delta/delta_reader_profiles.sql", "delta_reader_profiles()") == {
        "default": list(DEFAULT_READERS),
        "reads_deletion_vectors": {name: name not in blockers for name in PROFILES}}


def test_a_jinja_literal_reads_back_as_its_value_whatever_its_strings_hold():
    value = {"it's": [None, True, False, 0, -7, "{{ x }}", "%} \n \\ ' \" é"],
             "long": {f"key{index}": "x" * 30 for index in range(8)}, "empty": [], "": {}}
    literal = jinja_literal(value)
    assert "\n" in literal and max(map(len, literal.splitlines())) <= LINE_WIDTH
    assert jinja2.Environment().compile_expression(literal)() == value
