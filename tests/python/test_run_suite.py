"""`make test`'s split of the suite into processes (tests/run_suite.py)."""

from __future__ import annotations

import json

import run_suite


def test_every_module_runs_once_in_shards_of_about_equal_time():
    seconds = {"a": 100.0, "b": 60.0, "c": 50.0, "d": 40.0, "e": 10.0}
    parts = run_suite.shards(["a", "b", "c", "d", "e", "new"], seconds, 2, together=())
    assert sorted(name for part in parts for name in part) == ["a", "b", "c", "d", "e", "new"]
    loads = [sum(seconds.get(name, 52.0) for name in part) for part in parts]
    # longest first, each to the shorter shard; "new" counts as the mean, 52
    assert loads == [160.0, 152.0]
    assert parts == [["a", "c", "e"], ["b", "d", "new"]]  # each in the suite's order


def test_the_modules_of_a_group_run_in_one_process():
    seconds = {"a": 100.0, "b": 60.0, "c": 50.0, "d": 40.0, "e": 10.0}
    parts = run_suite.shards(["a", "b", "c", "d", "e"], seconds, 2,
                             together=(("d", "e", "gone"), ("b", "c")))
    # units: b+c 110, a 100, d+e 50: b+c | a, then d+e to a's shard
    assert parts == [["b", "c"], ["a", "d", "e"]]


def test_the_recorded_seconds_name_only_modules_of_the_suite():
    recorded = json.loads(run_suite.SECONDS.read_text())
    modules = run_suite.modules()
    assert set(recorded) <= set(modules), "remove the deleted modules from suite_seconds.json"
    assert {name for group in run_suite.TOGETHER for name in group} <= set(modules)
    assert "tests/python/test_run_suite.py" in modules
    assert modules.index("tests/python/test_cli.py") < modules.index(
        "tests/dbt_adapter/test_conformance.py")  # the roots in pyproject's order


def test_each_shard_has_its_own_home_and_no_exported_engine_port(tmp_path):
    environment = run_suite.shard_environment(
        {"LAKEMIRROR_ENGINE_PORT": "50051", "PATH": "/bin", "LAKEMIRROR_HOME": "/shared"},
        tmp_path / "home-1")
    assert environment == {"PATH": "/bin", "LAKEMIRROR_HOME": str(tmp_path / "home-1")}


def test_module_seconds_add_up_each_modules_tests_from_every_report(tmp_path):
    first, second, missing = tmp_path / "1.xml", tmp_path / "2.xml", tmp_path / "3.xml"
    first.write_text('<testsuites><testsuite>'
                     '<testcase classname="tests.python.test_cli" name="a" time="1.5"/>'
                     '<testcase classname="tests.python.test_cli.TestStatus" name="b" time="2"/>'
                     '</testsuite></testsuites>')
    second.write_text('<testsuites><testsuite>'
                      '<testcase classname="tests.dbt_adapter.test_conformance" name="c" '
                      'time="4.25"/><testcase classname="tests.python.test_cli" name="d"/>'
                      '</testsuite></testsuites>')
    assert run_suite.module_seconds([first, second, missing]) == {
        "tests/python/test_cli.py": 3.5, "tests/dbt_adapter/test_conformance.py": 4.25}


def test_the_measured_seconds_are_written_as_the_recorded_ones_are():
    text = run_suite.seconds_text({"tests/python/test_cli.py": 3.5,
                                   "tests/dbt_adapter/test_conformance.py": 130.4})
    assert json.loads(text) == {"tests/dbt_adapter/test_conformance.py": 130,
                                "tests/python/test_cli.py": 4}
    assert text == json.dumps(json.loads(text), indent=1) + "\n"
    assert run_suite.SECONDS.read_text() == run_suite.seconds_text(
        json.loads(run_suite.SECONDS.read_text()))  # the recorded file: a copy of such a text
