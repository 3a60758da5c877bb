"""dbt's parse once per project state (issue 41): a run on an unchanged project parses nothing
again (dbt's partial parse finds no change), also after a plain `dbt build`, which parses with
other vars, and after a run on another warehouse; and a run never builds a stale project: an
edited model, macro, dbt_project.yml, var or environment variable the project reads is used by
the next run."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.reference import ROW_MARKER as M
from lakemirror.service import MirrorService, RunSettings

from conftest import Zone, copy_project, on_dbt_events
from spark_cluster import free_port

BIN = Path(sys.executable).parent
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
PROBE_ENV = "PARSE_ONCE_PROBE"  # an environment variable the probe model reads
# A user model whose row shows what dbt parsed: the values come from the model's config
# (taken when dbt parses the model, kept in the manifest) and from a macro (its body is the
# parsed one), so a run on a stale manifest would show the old ones.
PROBE_MODEL = """\
{{ config(meta={'from_var': var('probe_var', 'none'),
                'from_project': var('probe_project', 'none'),
                'from_env': env_var('%s', 'unset')}) }}
select '{{ probe_value() }}' as from_macro,
       '{{ model.config.meta.from_var }}' as from_var,
       '{{ model.config.meta.from_project }}' as from_project,
       '{{ model.config.meta.from_env }}' as from_env,
       '%%s' as from_model,
       count(*) as customers
from {{ ref('dbo__customers') }}
""" % PROBE_ENV
PROBE_MACRO = "{%% macro probe_value() %%}%s{%% endmacro %%}\n"
FULL_PARSE = "UnableToPartialParse"  # dbt's event when it parses the whole project again


class ParseEvents:
    """dbt's partial-parse outcomes of the invocations since the last `take`."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, event) -> None:
        if event.info.name in (FULL_PARSE, "PartialParsingEnabled"):
            self.names.append(event.info.name)

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return names


@pytest.fixture
def parse_events(monkeypatch):
    events = ParseEvents()
    on_dbt_events(monkeypatch, events)
    return events


def probe_project(tmp_path):
    project = copy_project(tmp_path / "project")
    (project / "models/user").mkdir(parents=True)
    (project / "models/user/probe.sql").write_text(PROBE_MODEL % "model 1")
    (project / "macros/probe_value.sql").write_text(PROBE_MACRO % "macro 1")
    set_project_var(project, "project 1")
    return project


def set_project_var(project, value):
    """dbt_project.yml's var probe_project is `value`."""
    path = project / "dbt_project.yml"
    text = re.sub(r"\n  probe_project: .*", "", path.read_text())
    path.write_text(text.replace("\nvars:\n", f"\nvars:\n  probe_project: {value}\n", 1))


class Mirror:
    """`lakemirror run` in this process on one landing zone, each run after a new file."""

    def __init__(self, tmp_path, project, name="default"):
        self.zone = Zone(tmp_path / f"zone-{name}")
        self.zone.table("Customers", ["id"])
        self.warehouse = tmp_path / f"wh-{name}"
        self.project = project
        self.name = name
        self.sequence = 0

    def run(self, **options):
        self.sequence += 1
        self.zone.write("Customers", self.sequence,
                        [{"id": self.sequence, "v": "x", M: 0}], SCHEMA)
        statuses = MirrorService(RunSettings.given(self.zone.root, self.warehouse, self.project,
                                                   warehouse_name=self.name, quiet=True,
                                                   **options)).run()
        assert [status.status for status in statuses] == ["replicating"], statuses

    def probe(self):
        [row] = DeltaTable(str(self.warehouse / "analytics/probe")).to_pyarrow_table(
            columns=["from_macro", "from_var", "from_project", "from_env", "from_model",
                     "customers"]).to_pylist()
        return row


@pytest.mark.slow
def test_each_edit_of_the_project_is_used_by_the_next_run(tmp_path, monkeypatch):
    monkeypatch.setenv(PROBE_ENV, "env 1")
    project = probe_project(tmp_path)
    mirror = Mirror(tmp_path, project)
    mirror.run(dbt_vars={"probe_var": "var 1"})
    expected = {"from_macro": "macro 1", "from_var": "var 1", "from_project": "project 1",
                "from_env": "env 1", "from_model": "model 1", "customers": 1}
    assert mirror.probe() == expected

    (project / "models/user/probe.sql").write_text(PROBE_MODEL % "model 2")
    mirror.run(dbt_vars={"probe_var": "var 1"})
    assert mirror.probe() == expected | {"from_model": "model 2", "customers": 2}

    (project / "macros/probe_value.sql").write_text(PROBE_MACRO % "macro 2")
    mirror.run(dbt_vars={"probe_var": "var 1"})
    assert mirror.probe() == expected | {"from_model": "model 2", "from_macro": "macro 2",
                                         "customers": 3}

    set_project_var(project, "project 2")
    mirror.run(dbt_vars={"probe_var": "var 1"})
    expected |= {"from_model": "model 2", "from_macro": "macro 2", "from_project": "project 2"}
    assert mirror.probe() == expected | {"customers": 4}

    mirror.run(dbt_vars={"probe_var": "var 2"})
    assert mirror.probe() == expected | {"from_var": "var 2", "customers": 5}

    monkeypatch.setenv(PROBE_ENV, "env 2")
    mirror.run(dbt_vars={"probe_var": "var 2"})
    assert mirror.probe() == expected | {"from_var": "var 2", "from_env": "env 2",
                                         "customers": 6}


@pytest.mark.slow
def test_an_unchanged_project_is_not_parsed_again_by_runs_plain_dbt_or_other_warehouses(
        tmp_path, parse_events):
    project = probe_project(tmp_path)
    mirror = Mirror(tmp_path, project)
    mirror.run()
    assert FULL_PARSE in parse_events.take()  # the first run parses it all
    mirror.run()
    assert parse_events.take() == ["PartialParsingEnabled"]

    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port()),
           "LAKEMIRROR_WAREHOUSE": str(mirror.warehouse),
           "DBT_PROFILES_DIR": str(project / "profiles")}

    def sh(*args):
        return subprocess.run([str(BIN / args[0]), *args[1:]], cwd=project, env=env,
                              capture_output=True, text=True, timeout=300)

    assert sh("lakemirror", "engine", "start").returncode == 0
    try:
        plain = [sh("dbt", "build", "--select", "probe")]
        mirror.run()  # between two plain builds
        assert parse_events.take() == ["PartialParsingEnabled"]
        plain.append(sh("dbt", "build", "--select", "probe"))
    finally:
        sh("lakemirror", "engine", "stop")
    assert [build.returncode for build in plain] == [0, 0], plain[0].stdout
    # plain dbt parses it all the first time only: neither it nor the runs spoil the other's
    assert ["Unable to do partial parsing" in build.stdout for build in plain] == [
        True, False], plain[1].stdout
    assert mirror.probe()["customers"] == 3

    other = Mirror(tmp_path, project, name="other")  # another warehouse: other vars
    other.run()
    assert FULL_PARSE in parse_events.take()  # its first run
    mirror.run()  # back on the first warehouse
    assert parse_events.take() == ["PartialParsingEnabled"]
    assert mirror.probe()["customers"] == 4
