"""The pieces of the embedded engine's writes through delta-rs (engine.delta_rs_writes): which
statements are requests, and the metadata commits lakemirror writes itself
(delta.metadata_commit), checked in the Delta log as delta-rs reads it. The writes themselves
run end to end in test_change_data_feed."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemirror.delta.metadata_commit import MetadataChange, commit_metadata
from lakemirror.engine.delta_rs_writes import REQUEST_MARK, written_request
from lakemirror.storage.warehouse import LocalWarehouse

ROWS = pa.table({"id": pa.array([1], pa.int64()), "v": pa.array(["a"])},
                schema=pa.schema([pa.field("id", pa.int64(), False),
                                  pa.field("v", pa.string(), False)]))


def test_a_request_is_read_only_at_the_start_of_a_statement():
    request = {"write": "merge", "table": "/w/dbo/t", "on": "target.`a` <=> source.`a`"}
    text = REQUEST_MARK + json.dumps(request)
    assert written_request(text) == request
    assert written_request('/* {"app": "dbt", "node_id": "model.p.m"} */\n' + text) == request
    assert written_request(text + "\n/* an appended query comment */") == request
    # A name from the landing zone sits inside SQL (quoted), never at the statement's start.
    hostile = f"select `x{REQUEST_MARK}{json.dumps(request)}` from t"
    assert written_request(hostile) is None
    assert written_request(f"/* comment */ select 1 -- {REQUEST_MARK}{{}}") is None


def table(tmp_path, configuration=None):
    location = tmp_path / "t"
    write_deltalake(str(location), ROWS, configuration=configuration)
    return location


def test_turning_the_feed_on_keeps_a_legacy_protocol_and_relaxes_not_null(tmp_path):
    location = table(tmp_path)
    change = MetadataChange(set={"delta.enableChangeDataFeed": "true"}, all_nullable=True)
    assert commit_metadata(location, change, operation="SET TBLPROPERTIES") == 1
    delta = DeltaTable(str(location))
    protocol = delta.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 4)
    assert delta.metadata().configuration == {"delta.enableChangeDataFeed": "true"}
    assert [field["nullable"] for field in json.loads(delta.schema().to_json())["fields"]] \
        == [True, True]
    assert delta.to_pyarrow_table().to_pylist() == [{"id": 1, "v": "a"}]
    # The same change again commits nothing.
    assert commit_metadata(location, change, operation="SET TBLPROPERTIES") is None
    assert DeltaTable(str(location)).version() == 1


def test_a_feature_added_to_table_features_lists_only_what_was_asked(tmp_path):
    """delta-rs's own property commit would add variantType too (test_change_data_feed
    checks tables the engine created), which most readers refuse."""
    location = table(tmp_path, {"delta.enableDeletionVectors": "true"})
    before = DeltaTable(str(location)).protocol()
    commit_metadata(location, MetadataChange(set={"delta.feature.changeDataFeed": "supported",
                                                  "delta.enableChangeDataFeed": "true"}),
                    operation="SET TBLPROPERTIES")
    after = DeltaTable(str(location)).protocol()
    assert set(after.writer_features) == set(before.writer_features) | {"changeDataFeed"}
    assert set(after.reader_features) == set(before.reader_features)


def test_a_legacy_table_moving_to_table_features_lists_what_its_versions_implied(tmp_path):
    location = table(tmp_path, {"delta.enableChangeDataFeed": "true"})  # reader 1, writer 4
    commit_metadata(location, MetadataChange(set={"delta.enableDeletionVectors": "true"}),
                    operation="SET TBLPROPERTIES")
    protocol = DeltaTable(str(location)).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert set(protocol.reader_features) == {"deletionVectors"}
    assert {"appendOnly", "invariants", "checkConstraints", "changeDataFeed",
            "generatedColumns", "deletionVectors"} == set(protocol.writer_features)


def test_added_columns_and_unset_properties(tmp_path):
    location = table(tmp_path)
    commit_metadata(location, MetadataChange(set={"team.owner": "sales"}),
                    operation="SET TBLPROPERTIES")
    assert DeltaTable(str(location)).metadata().configuration == {"team.owner": "sales"}
    added = ({"name": "x`y", "type": "string", "nullable": False, "metadata": {}},)
    commit_metadata(location, MetadataChange(unset=["team.owner"], added=added),
                    operation="ADD COLUMNS")
    delta = DeltaTable(str(location))
    assert delta.metadata().configuration == {}
    fields = json.loads(delta.schema().to_json())["fields"]
    assert [(field["name"], field["nullable"]) for field in fields] == [
        ("id", False), ("v", False), ("x`y", True)]
    assert delta.to_pyarrow_table().to_pylist() == [{"id": 1, "v": "a", "x`y": None}]


def test_a_commit_that_loses_the_race_is_made_on_the_next_version(tmp_path, monkeypatch):
    location = table(tmp_path)
    create = LocalWarehouse.create_bytes
    raced = []

    def another_writer_first(self, key, data):
        if not raced:  # another writer commits the same version just before this one
            raced.append(key)
            write_deltalake(str(location), ROWS, mode="append")
        return create(self, key, data)

    monkeypatch.setattr(LocalWarehouse, "create_bytes", another_writer_first)
    change = MetadataChange(set={"team.owner": "sales"})
    assert commit_metadata(location, change, operation="SET TBLPROPERTIES") == 2
    assert raced == ["_delta_log/00000000000000000001.json"]
    delta = DeltaTable(str(location))
    assert delta.metadata().configuration == {"team.owner": "sales"}
    assert len(delta.to_pyarrow_table()) == 2


@pytest.mark.parametrize("existing", [True, False])
def test_create_bytes_never_replaces_a_file(tmp_path, existing):
    storage = LocalWarehouse(tmp_path)
    if existing:
        storage.write_bytes("a/b.json", b"first")
    assert storage.create_bytes("a/b.json", b"second") is not existing
    assert storage.read_bytes("a/b.json") == (b"first" if existing else b"second")
    assert [path.name for path in (tmp_path / "a").iterdir()] == ["b.json"]
