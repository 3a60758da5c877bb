"""The engine is known by the target's mark (or its parameters), never by the target's name: a
renamed embedded target keeps the embedded engine's workarounds, in Python and in the macros."""

from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from lakemirror.engine.identity import ENGINE_MARK, project_engine, target_engine
from lakemirror.errors import ConfigError
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService, RunSettings
from lakemirror.storage import parse_location

from conftest import Zone, as_multiset, copy_project, mirrored_rows
from test_mirror_dbt import EDGE_CASES, PAIR, data_rows

M = ROW_MARKER
WIDER = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.int64()), ("w", pa.string()),
                   (M, pa.int32())])
MOTO = {"endpoint": "http://127.0.0.1:9000", "allow_http": "true", "region": "us-east-1",
        "access_key_id": "testing", "secret_access_key": "testing"}


def renamed_target_project(root: Path, renames: dict[str, str]) -> Path:
    """A project copy whose profile's targets are renamed (old name → new), marks kept."""
    project = copy_project(root / "project")
    path = project / "profiles" / "profiles.yml"
    profiles = yaml.safe_load(path.read_text())
    outputs = profiles["lakemirror"]["outputs"]
    profiles["lakemirror"]["outputs"] = {renames.get(name, name): output
                                         for name, output in outputs.items()}
    path.write_text(yaml.safe_dump(profiles))
    return project


@pytest.mark.parametrize("output, engine", [
    ({"method": "session", "server_side_parameters": {ENGINE_MARK: "embedded"}}, "embedded"),
    ({"method": "session", "server_side_parameters": {"spark.remote": "sc://h:1"}}, "connect"),
    ({"method": "session", "server_side_parameters": {"spark.master": "local[*]"}}, "spark"),
    ({"method": "session"}, "spark"),
    ({"method": "thrift", "host": "h"}, "server"),
    ({"method": "session", "server_side_parameters": {"spark.remote": "sc://h:1",
                                                      ENGINE_MARK: "embedded"}}, "embedded"),
])
def test_a_targets_engine_is_its_mark_else_inferred_from_its_parameters(output, engine):
    assert target_engine(output) == engine


def test_an_unknown_mark_or_target_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError, match="'sail'"):
        target_engine({"server_side_parameters": {ENGINE_MARK: "sail"}})
    project = renamed_target_project(tmp_path, {"embedded": "dev"})
    with pytest.raises(ConfigError, match="no target 'embedded'.*dev"):
        project_engine(project, "embedded", project / "profiles")


def test_the_settings_know_the_engine_by_the_mark_not_the_name(tmp_path):
    project = renamed_target_project(tmp_path, {"embedded": "spark", "spark": "embedded"})
    settings = RunSettings.given(tmp_path / "zone", tmp_path / "wh", project, target="embedded")
    assert (settings.target, settings.engine) == ("embedded", "spark")
    assert RunSettings.given(tmp_path / "zone", tmp_path / "wh", project,
                             target="spark").engine == "embedded"


def test_an_object_store_warehouse_is_accepted_for_an_embedded_target_named_prod(
        tmp_path, monkeypatch):
    """The embedded engine reaches object storage itself; a Spark target named anything is
    refused without the connector's jars."""
    monkeypatch.setenv("LAKEMIRROR_DELTA_JARS", str(tmp_path))  # no hadoop-aws jar there
    project = renamed_target_project(tmp_path, {"embedded": "prod", "spark": "embedded"})
    warehouse = parse_location("s3://lake/wh", MOTO)
    settings = RunSettings.given(tmp_path / "zone", warehouse, project, target="prod")
    assert (settings.warehouse, settings.engine) == (warehouse, "embedded")
    with pytest.raises(ConfigError, match="hadoop-aws"):
        RunSettings.given(tmp_path / "zone", warehouse, project, target="embedded")


@pytest.mark.slow
def test_an_embedded_target_named_dev_mirrors_like_the_reference(tmp_path):
    """The edge cases of test_mirror_dbt's reference test, and an added column (which the
    embedded engine adds by schema evolution, having no ALTER TABLE ADD COLUMNS), on the
    embedded engine's target renamed `dev`."""
    zone = Zone(tmp_path / "LandingZone")
    zone.root.mkdir()
    project = renamed_target_project(tmp_path, {"embedded": "dev"})
    service = MirrorService(RunSettings.given(zone.root, tmp_path / "warehouse", project,
                                              target="dev", quiet=True))
    zone.table("Sales.schema/Pairs", ["a", "b"])
    files = [*EDGE_CASES, [{"a": 5, "b": "q", "v": 8, "w": "new", M: 4}]]  # a column added
    for sequence, rows in enumerate(files, 1):
        zone.write("Sales.schema/Pairs", sequence, rows, WIDER if "w" in rows[0] else PAIR)
        service.run()
    expected = data_rows(apply_changes(files, ["a", "b"]))
    assert (mirrored_rows(service.settings.warehouse, "sales", "pairs")
            == as_multiset([{"w": None, **row} for row in expected]))
