"""dbt's jinja reuses the code of a template source compiled before in the process (issue 41):
once per source and environment, rendered afresh with each context, bounded, and never stale
when a project's text is edited between two dbt invocations."""

import jinja2
import pytest
from dbt_common.clients.jinja import (
    MacroFuzzEnvironment,
    NativeSandboxEnvironment,
    get_environment,
)

from lakemirror.compiled_templates import (
    CompiledCode,
    compiling_once,
    reuse_compiled_templates,
)
from lakemirror.parsed_projects import parse_project

from conftest import copy_project


class Compiles:
    """jinja's own compile, counting its calls."""

    def __init__(self) -> None:
        self.sources: list[str] = []

    def __call__(self, environment, source, *args):
        self.sources.append(source)
        return jinja2.Environment.compile(environment, source, *args)


@pytest.fixture
def compiles(monkeypatch):
    """dbt's environments compiling once into a cache of three, over a counted compile."""
    counted = Compiles()
    monkeypatch.setattr(MacroFuzzEnvironment, "compile",
                        compiling_once(counted, CompiledCode(capacity=3)))
    return counted


def render(source, context):
    return get_environment().from_string(source).render(context)


def test_the_same_source_compiles_once_and_renders_with_each_context(compiles):
    source = "{{ greeting ~ ', ' ~ name | upper }}{% if name == 'b' %}!{% endif %}"
    assert render(source, {"greeting": "hello", "name": "a"}) == "hello, A"
    assert render(source, {"greeting": "bye", "name": "b"}) == "bye, B!"
    assert compiles.sources == [source]


def test_another_source_environment_class_or_filter_set_compiles_again(compiles):
    source = "{{ pair }}"
    assert MacroFuzzEnvironment().from_string(source).render({"pair": (1, 2)}) == "(1, 2)"
    MacroFuzzEnvironment().from_string("{{ pair[0] }}")
    native = NativeSandboxEnvironment()  # the same filters and tests: only its class differs
    assert native.from_string(source).render({"pair": (1, 2)}) == (1, 2)
    environment = MacroFuzzEnvironment()
    environment.filters["shout"] = str.upper
    environment.from_string(source)
    assert compiles.sources == [source, "{{ pair[0] }}", source, source]


def test_a_filter_only_one_environment_has_is_checked_in_every_environment(compiles):
    source = "{{ 'x' | shout }}"
    environment = get_environment()
    environment.filters["shout"] = str.upper
    assert environment.from_string(source).render({}) == "X"
    with pytest.raises(Exception, match="No filter named 'shout'"):
        get_environment().from_string(source)


def test_the_cache_keeps_the_most_recently_used_sources_up_to_its_capacity(compiles):
    first, second, third, fourth = (f"{{{{ {number} }}}}" for number in range(4))
    for source in (first, second, third, first, fourth):  # the 4th drops the 2nd
        render(source, {})
    for source in (first, third, fourth, second):
        render(source, {})
    assert compiles.sources == [first, second, third, fourth, second]


def test_installing_twice_wraps_dbt_compile_once():
    reuse_compiled_templates()
    installed = MacroFuzzEnvironment.compile
    reuse_compiled_templates()
    assert MacroFuzzEnvironment.compile is installed
    assert NativeSandboxEnvironment.compile is installed
    assert not hasattr(installed.__wrapped__, "__wrapped__")


@pytest.mark.slow
def test_a_model_edited_between_two_parses_in_one_process_is_parsed_as_edited(tmp_path):
    project = copy_project(tmp_path / "project")
    model = project / "models/probe.sql"
    args = ["--project-dir", str(project), "--profiles-dir", str(project / "profiles"),
            "--quiet"]
    for edit in ("first", "second"):
        model.write_text("{{ config(meta={'edit': '%s'}, post_hook=\"select '%s'\") }}\n"
                         "select '{{ model.config.meta.edit }}' as edit\n" % (edit, edit))
        manifest = parse_project([*args, "--no-partial-parse"])
        [probe] = [node for node in manifest.nodes.values() if node.name == "probe"]
        assert probe.config.meta == {"edit": edit}
        assert f"select '{edit}'" in [hook.sql for hook in probe.config.post_hook]


def test_equal_environment_settings_are_kept_once_for_all_their_keys():
    compiled = CompiledCode(capacity=3)
    first = compiled.key((frozenset({"upper"}), "text"), "{{ a }}")
    second = compiled.key((frozenset({"upper"}), "text"), "{{ b }}")
    assert first[0] is second[0]


def test_an_environment_whose_filters_cannot_be_hashed_compiles_each_time(compiles):
    class Unhashable:
        __hash__ = None

        def __call__(self, value):
            return f"<{value}>"

    for _ in range(2):
        environment = MacroFuzzEnvironment()
        environment.filters["wrap"] = Unhashable()
        assert environment.from_string("{{ 'x' | wrap }}").render({}) == "<x>"
    assert compiles.sources == ["{{ 'x' | wrap }}"] * 2
