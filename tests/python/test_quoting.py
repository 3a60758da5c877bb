"""The quoting functions turn any name into inert text of their target language: rendered or
parsed back, it is exactly the name again."""

import jinja2
import pytest
import yaml
from dbt.clients.jinja import get_rendered
from hypothesis import given
from hypothesis import strategies as st

from lakemirror.codegen.quoting import (
    JINJA_SAFE,
    dbt_yaml_text,
    jinja_string,
    sql_identifier,
    yaml_string,
)

HOSTILE = [
    "", "plain_name", "it's", 'say "hi"', "back\\slash", "\\x7b", "\\'", "line\nbreak",
    "cr\rlf\r\n", "tab\t", "{{ env_var('LM_SECRET_PROBE') }}", "{% if true %}x{% endif %}",
    "note{#1", "#}", "{{", "}}", "%}", "a`b", "``", "é ü ß", "😀 emoji", "\u2028sep\u0085",
    "nul\x00byte", "\x7f\x01", "'; drop table t; --",
]


LOADERS = [yaml.SafeLoader, *([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])]


def render(template: str) -> str:
    return jinja2.Environment().from_string(template).render()


def load_name(document: str) -> str:
    """The `name` of a YAML document, checked to read the same with each loader dbt may use."""
    [name] = {yaml.load(document, Loader=loader)["name"] for loader in LOADERS}
    return name


@pytest.mark.parametrize("value", HOSTILE)
def test_jinja_string_renders_back_to_the_value_in_jinja_and_dbt(value):
    literal = jinja_string(value)
    assert set(literal[1:-1]) <= JINJA_SAFE | {"\\"} and literal[0] == literal[-1] == "'"
    assert render("{{ " + literal + " }}") == value
    assert get_rendered("{{ " + literal + " }}", {}) == value


@given(st.text())
def test_jinja_string_round_trips_any_text(value):
    assert render("{{ " + jinja_string(value) + " }}") == value


@pytest.mark.parametrize("value", HOSTILE)
def test_dbt_yaml_text_is_plain_yaml_that_renders_to_the_value(value):
    assert get_rendered(load_name("name: " + dbt_yaml_text(value)), {}) == value
    assert load_name("name: " + yaml_string(value)) == value


@given(st.text())
def test_yaml_string_round_trips_any_text(value):
    document = "name: " + yaml_string(value)
    assert document.isascii() and document.isprintable() and load_name(document) == value


@pytest.mark.parametrize("name, quoted", [
    ("id", "`id`"), ("a`b", "`a``b`"), ("``", "``````"), ("it's \"q\"", "`it's \"q\"`"),
])
def test_sql_identifier_doubles_backticks(name, quoted):
    assert sql_identifier(name) == quoted
