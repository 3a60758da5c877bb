"""mirror_changes where a mirror lives (docs/pages/building-on-mirrors.md): an apply_changes
model over a mirror in object storage (moto's S3) equals its rebuild after every run, and sees
staging compaction in the staging log there; a history model is refused as a source of
changes before the model is written."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pytest

from lakemirror.delta.access import delta_table
from lakemirror.delta.rows import read_table
from lakemirror.environment import read_settings
from lakemirror.reference import ROW_MARKER as M, apply_changes
from lakemirror.service import MirrorService, RunSettings

from conftest import as_multiset, mirrored_rows
from test_apply_changes_settings import configure_moving
from test_delta_settings import configure
from test_mirror_changes import (
    DELETE, MODELS, SCHEMA, assert_compaction_waits_for_recent_models_only,
    assert_moving_equals_rebuilt, change_stream, mirror_with_models)


def object_mirror_with_models(root, monkeypatch, server):
    """mirror_with_models, its warehouse a fresh place on `server`."""
    monkeypatch.setenv("LAKEMIRROR_STORAGE_OPTIONS", json.dumps(dict(server.options)))
    zone, local = mirror_with_models(root)
    url = server.url(server.fresh_prefix("warehouse"))
    return zone, MirrorService(RunSettings.given(
        zone.root, url, local.settings.project_dir, quiet=True, env=read_settings()))


@pytest.mark.slow
def test_an_apply_changes_model_in_object_storage_equals_its_rebuild(tmp_path, monkeypatch,
                                                                     s3_server):
    zone, service = object_mirror_with_models(tmp_path, monkeypatch, s3_server)
    stream = change_stream(seed=7, files=3, per_file=12)
    assert {row["id"] for rows in stream[1:] for row in rows if row[M] == DELETE}  # deletes, too
    for sequence, rows in enumerate(stream, start=1):
        zone.write("Customers", sequence, rows, SCHEMA)
        service.run()
        assert not [node.error for node in service.run_models if node.status != 'success']
        assert mirrored_rows(service.settings.warehouse, "dbo", "customers") == as_multiset(
            apply_changes(stream[:sequence], ["id"]))
        assert_moving_equals_rebuilt(service)


@pytest.mark.slow
def test_staging_compaction_in_object_storage_waits_for_recent_models_only(
        tmp_path, monkeypatch, s3_server):
    """Compaction reads the models' positions, and the model's check the compacted position
    from the staging log, in the store."""
    assert_compaction_waits_for_recent_models_only(
        *object_mirror_with_models(tmp_path, monkeypatch, s3_server))


@pytest.mark.slow
def test_the_embedded_engines_change_data_feed_in_object_storage(tmp_path, monkeypatch,
                                                                 s3_server):
    """A mirror and an apply_changes model with Delta's change data feed on, in the store:
    their writes go through delta-rs with the store's options, and the mirror's feed, its
    inserts less its deletes from the version the feed starts at, is the mirror's state."""
    zone, service = object_mirror_with_models(tmp_path, monkeypatch, s3_server)
    configure(service, ["dbo:", "  dbo__customers: {+delta_features: [changeDataFeed]}"])
    configure_moving(service, delta_features=["changeDataFeed"])
    stream = change_stream(seed=11, files=3, per_file=12)
    for sequence, rows in enumerate(stream, start=1):
        zone.write("Customers", sequence, rows, SCHEMA)
        service.run()
        assert not [node.error for node in service.run_models if node.status != 'success']
        assert_moving_equals_rebuilt(service)
    state = as_multiset(apply_changes(stream, ["id"]))
    assert mirrored_rows(service.settings.warehouse, "dbo", "customers") == state
    feed = delta_table(service.settings.warehouse / "dbo" / "customers").load_cdf(
        starting_version=1).read_all()
    net: Counter[tuple[object, ...]] = Counter()
    for row in pa.table(feed).drop(["_lm_position", "_commit_version",
                                    "_commit_timestamp"]).to_pylist():
        change = row.pop("_change_type")
        net[tuple(sorted(row.items()))] += 1 if change == "insert" else -1
    assert +net == state and not -net
    moving = delta_table(service.settings.warehouse / "analytics" / "moving")
    assert "changeDataFeed" in moving.protocol().writer_features


def test_changes_of_a_history_model_are_refused_before_any_write(tmp_path):
    zone, service = mirror_with_models(tmp_path)
    project = service.settings.project_dir
    settings = project / "dbt_project.yml"
    settings.write_text(settings.read_text().replace(
        "vars:\n", "vars:\n  lakemirror_history: ['dbo.customers']\n"))
    (project / "models/user/moving.sql").write_text(MODELS["moving"].replace(
        "ref('dbo__customers')", "ref('dbo__customers__history')"))
    zone.write("Customers", 1, change_stream(seed=1, files=1, per_file=5)[0], SCHEMA)
    service.run()
    [refused] = [node for node in service.run_models if node.name == "moving"]
    assert refused.status == "error"
    assert "mirror_changes reads a mirrored table, not a history model" in str(refused.error)
    assert "filter on _lm_valid_from" in str(refused.error)
    assert read_table(service.settings.warehouse / "dbo" / "customers__history").num_rows > 0
    assert not (service.settings.warehouse / "analytics" / "moving").exists()
