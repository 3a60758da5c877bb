"""The rest of the landing-zone contract through dbt: upsert default, file detection by update
time, ConditionalUpdateColumn, immutable keys, retention, partner events and `status`."""

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakemirror.cli.main import cli
from lakemirror.errors import LandingZoneError
from lakemirror.landing import discover_tables
from lakemirror.monitor import parse_partner_events
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService, RunSettings
from lakemirror.staging import Warehouse, ingest_table

from conftest import Zone, as_multiset, copy_project, mirrored_rows

M = ROW_MARKER
PLAIN = pa.schema([("id", pa.int64()), ("v", pa.string())])
MARKED = PLAIN.append(pa.field(M, pa.int32()))
TIMED = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("v", pa.string()), (M, pa.int32())])


def write_metadata(zone, folder, document):
    path = zone.root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "_metadata.json").write_text(json.dumps(document))


def data_rows(rows):
    return [{k: v for k, v in row.items() if k != M} for row in rows]


@pytest.mark.slow
def test_upsert_default_row_marker(zone, service):
    write_metadata(zone, "T", {"keyColumns": ["id"], "isUpsertDefaultRowMarker": True})
    files = [[{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], [{"id": 1, "v": "c"}]]
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, PLAIN)
    service.run()
    expected = apply_changes(files, ["id"], default_marker=4)
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)


@pytest.mark.slow
def test_last_update_time_detection_orders_by_time_then_name_and_never_repeats(zone, service):
    write_metadata(zone, "T", {"keyColumns": ["id"],
                               "fileDetectionStrategy": "LastUpdateTimeFileDetection"})
    folder = zone.root / "T"

    def publish(name, rows, mtime):
        path = folder / name
        pq.write_table(pa.Table.from_pylist(rows, schema=MARKED), path)
        os.utime(path, ns=(mtime, mtime))

    publish("zeta.parquet", [{"id": 1, "v": "first", M: 0}], 1_000)
    publish("beta.parquet", [{"id": 1, "v": "second", M: 1}], 2_000)
    publish("alpha.parquet", [{"id": 1, "v": "third", M: 1}], 2_000)  # same time: name first
    [status] = service.run()
    assert status.status == "replicating" and status.last_sequence == 3
    assert (mirrored_rows(service.settings.warehouse, "dbo", "t")
            == as_multiset([{"id": 1, "v": "second"}]))
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["beta.parquet"]
    publish("beta.parquet", [{"id": 1, "v": "rewritten", M: 1}], 3_000)  # rewritten: ignored
    publish("gamma.parquet", [{"id": 2, "v": "new", M: 0}], 4_000)
    [status] = service.run()
    assert status.last_sequence == 4
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": 1, "v": "second"}, {"id": 2, "v": "new"}])


@pytest.mark.slow
def test_conditional_update_column_against_stored_rows(zone, service):
    write_metadata(zone, "T", {"keyColumns": ["id"], "ConditionalUpdateColumn": "ts"})
    files = [
        [{"id": 1, "ts": 10, "v": "new", M: 4}, {"id": 2, "ts": 5, "v": "x", M: 0}],
        [{"id": 1, "ts": 3, "v": "late old update", M: 1},
         {"id": 2, "ts": 9, "v": None, M: 2}, {"id": 2, "ts": 7, "v": "late upsert", M: 4},
         {"id": 3, "ts": None, "v": "null ts", M: 4}, {"id": 3, "ts": 1, "v": "wins", M: 1}],
        [{"id": 1, "ts": 10, "v": "tie wins", M: 1}, {"id": 1, "ts": 2, "v": None, M: 2}],
    ]
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, TIMED)
        [status] = service.run()
        assert status.status == "replicating", status.error
    expected = apply_changes(files, ["id"], conditional_column="ts")
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(data_rows(expected))
    assert {row["v"] for row in expected} == {"tie wins", "wins"}


conditional_changes = st.lists(st.fixed_dictionaries({
    "id": st.integers(0, 2), "ts": st.one_of(st.none(), st.integers(0, 5)),
    "v": st.sampled_from(["a", "b", "c"]), M: st.sampled_from([0, 1, 2, 4])}),
    min_size=1, max_size=8)


@pytest.mark.slow
@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(files=st.lists(conditional_changes, min_size=2, max_size=3))
def test_random_conditional_streams_match_reference(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("conditional")
    zone = Zone(root / "LandingZone")
    write_metadata(zone, "T", {"keyColumns": ["id"], "ConditionalUpdateColumn": "ts"})
    service = MirrorService(RunSettings.given(zone.root, root / "warehouse",
                                              copy_project(root / "project"), quiet=True))
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, TIMED)
        service.run()
    expected = apply_changes(files, ["id"], conditional_column="ts")
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(data_rows(expected))


def test_changed_key_columns_fail_the_table(zone, tmp_path):
    write_metadata(zone, "T", {"keyColumns": ["id"]})
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}], MARKED)
    warehouse = Warehouse(tmp_path / "wh")
    [table] = discover_tables(zone.root)
    assert ingest_table(table, warehouse).status == "replicating"
    write_metadata(zone, "T", {"keyColumns": ["v"]})
    zone.write("T", 2, [{"id": 1, "v": "a", M: 0}], MARKED)
    result = ingest_table(table, warehouse)
    assert result.status == "failed" and "recreate the table folder" in result.error
    assert (zone.root / "T" / "00000000000000000002.parquet").exists()


def test_retention_deletes_old_processed_files_but_never_the_newest(zone, tmp_path):
    write_metadata(zone, "T", {"keyColumns": ["id"]})
    for sequence in (1, 2, 3):
        zone.write("T", sequence, [{"id": sequence, "v": "a", M: 0}], MARKED)
    [table] = discover_tables(zone.root)
    ingest_table(table, Warehouse(tmp_path / "wh"))
    ready = zone.root / "T" / "_FilesReadyToDelete"
    ready.mkdir()
    (ready / "old.parquet").write_bytes(b"x")
    old = time.time() - 3 * 86_400
    for path in [ready / "old.parquet", *(zone.root / "T" / "_ProcessedFiles").iterdir()]:
        os.utime(path, (old, old))
    ingest_table(table, Warehouse(tmp_path / "wh"), retention_days=7)
    assert len(list((zone.root / "T" / "_ProcessedFiles").iterdir())) == 2
    ingest_table(table, Warehouse(tmp_path / "wh"), retention_days=2)
    assert list((zone.root / "T" / "_ProcessedFiles").iterdir()) == []
    assert not (ready / "old.parquet").exists()
    assert (zone.root / "T" / "00000000000000000003.parquet").exists()


@pytest.mark.slow
def test_status_shows_monitoring_and_partner_events(zone, tmp_path):
    (zone.root).mkdir(parents=True)
    (zone.root / "_partnerEvents.json").write_text(json.dumps(
        {"partnerName": "Contoso CDC", "sourceInfo": {"sourceType": "SQL",
                                                       "sourceVersion": "2019"}}))
    write_metadata(zone, "Good", {"keyColumns": ["id"]})
    write_metadata(zone, "Gap", {"keyColumns": ["id"]})
    write_metadata(zone, "Bad", {"keyColumns": ["id"]})
    good = zone.write("Good", 1, [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}], MARKED)
    zone.write("Gap", 1, [{"id": 1, "v": "a", M: 0}], MARKED)
    zone.write("Gap", 3, [{"id": 1, "v": "a", M: 0}], MARKED)
    zone.write("Bad", 1, [{"id": 1, "v": "a", M: 9}], MARKED)
    project = copy_project(tmp_path / "project")
    env = {"LAKEMIRROR_LANDING_ZONE": str(zone.root), "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh")}
    runner = CliRunner()
    assert runner.invoke(cli, ["run", "--json", "--project-dir", str(project)],
                         env=env).exit_code == 1
    result = runner.invoke(cli, ["status", "--json"], env=env)
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["partner"] == {"partner_name": "Contoso CDC", "source_type": "SQL",
                                   "source_version": "2019", "additional_information": None}
    tables = {t["table"]: t for t in document["tables"]}
    assert tables["good"]["status"] == "replicating"
    assert tables["good"]["last_sequence_applied"] == 1 and tables["good"]["rows"] == 2
    assert tables["good"]["processed_rows"] == 2
    assert tables["good"]["processed_bytes"] == good.stat().st_size
    assert tables["good"]["last_sync"] is not None and tables["good"]["error"] is None
    assert tables["gap"]["status"] == "waiting" and tables["gap"]["files_pending"] == 1
    assert tables["bad"]["status"] == "failed" and tables["bad"]["error_class"] == "user"
    text = runner.invoke(cli, ["status"], env=env).stdout
    assert "Contoso CDC" in text and "dbo.good" in text


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON"), ('{"sourceInfo": {}}', "partnerName"),
    ('{"partnerName": "p", "sourceInfo": []}', "sourceInfo must be an object"),
    ('{"partnerName": "p", "sourceInfo": {"sourceVersion": [2019]}}', "sourceVersion must be"),
])
def test_invalid_partner_events_are_reported(tmp_path, text, message):
    path = tmp_path / "_partnerEvents.json"
    path.write_text(text)
    with pytest.raises(LandingZoneError, match=message):
        parse_partner_events(path)
