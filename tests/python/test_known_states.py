"""The Delta states a service hands to its next build (lakemirror.delta.known_states):
only for a table still at the version read, never for one recreated meanwhile, never another
service's, and through dbt's vars."""

import json
import re
import shutil
from dataclasses import replace

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from lakemirror.delta.known_states import STATES_KEY, STATES_VAR, KnownStates
from lakemirror.reference import ROW_MARKER
from lakemirror.run.dbt import invoke_dbt
from lakemirror.service import MirrorService
from lakemirror.storage.warehouse import LocalWarehouse

from conftest import mirror_setup

ROWS = pa.table({"id": [1, 2]})
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])


def test_a_state_is_handed_on_only_while_the_table_has_no_later_commit(tmp_path):
    warehouse = tmp_path / "warehouse"
    table, storage = warehouse / "dbo" / "t", LocalWarehouse(warehouse)
    write_deltalake(str(table), ROWS, configuration={"delta.appendOnly": "false"})
    write_deltalake(str(table), ROWS, mode="append")
    known = KnownStates()
    known.remember(storage, "dbo/t", DeltaTable(str(table)))
    assert known.current(tmp_path / "other", LocalWarehouse(tmp_path / "other")) == {}
    assert known.current(warehouse, storage) == {str(table): {
        "configuration": {"delta.appendOnly": "false"},
        "protocol": {"minReaderVersion": 1, "minWriterVersion": 2, "readerFeatures": [],
                     "writerFeatures": []}}}

    # Another writer's commit.
    DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "true"})
    assert known.current(warehouse, storage) == {}

    # The table recreated up to the version read, with other properties.
    known.remember(storage, "dbo/t", DeltaTable(str(table)))
    assert list(known.current(warehouse, storage)) == [str(table)]
    shutil.rmtree(table)
    write_deltalake(str(table), ROWS, configuration={"delta.appendOnly": "false"})
    write_deltalake(str(table), ROWS, mode="append")
    write_deltalake(str(table), ROWS, mode="append")
    assert DeltaTable(str(table)).version() == 2
    assert known.current(warehouse, storage) == {}


def test_two_services_keep_their_own_states(tmp_path):
    first, second = tmp_path / "one" / "dbo" / "t", tmp_path / "two" / "dbo" / "t"
    for table in (first, second):
        write_deltalake(str(table), ROWS)
    one, two = LocalWarehouse(tmp_path / "one"), LocalWarehouse(tmp_path / "two")
    mine, theirs = KnownStates(), KnownStates()
    mine.remember(one, "dbo/t", DeltaTable(str(first)))
    theirs.remember(two, "dbo/t", DeltaTable(str(second)))
    assert list(mine.current(tmp_path / "one", one)) == [str(first)]
    assert list(theirs.current(tmp_path / "two", two)) == [str(second)]


def test_saved_states_merge_with_other_runs_and_a_damaged_file_is_no_state(tmp_path):
    warehouse, storage = tmp_path / "warehouse", LocalWarehouse(tmp_path / "warehouse")
    for name in ("a", "b"):
        write_deltalake(str(warehouse / "dbo" / name), ROWS)
    first_run, second_run = KnownStates(), KnownStates()
    first_run.remember(storage, "dbo/a", DeltaTable(str(warehouse / "dbo" / "a")))
    second_run.remember(storage, "dbo/b", DeltaTable(str(warehouse / "dbo" / "b")))
    first_run.save(storage)
    second_run.save(storage)  # keeps the first run's table
    written = (warehouse / STATES_KEY).stat().st_mtime_ns
    second_run.save(storage)  # nothing new: an idle run writes nothing
    assert (warehouse / STATES_KEY).stat().st_mtime_ns == written
    next_process = KnownStates()
    next_process.load(storage)
    assert list(next_process.current(warehouse, storage)) == [
        str(warehouse / "dbo" / "a"), str(warehouse / "dbo" / "b")]

    for damaged in ("{not json", '{"dbo/a": {"version": "1"}}', "[]", "\udcff"):
        (warehouse / STATES_KEY).write_text(damaged, errors="surrogateescape")
        fresh = KnownStates()
        fresh.load(storage)
        assert fresh.current(warehouse, storage) == {}


def test_a_warm_service_hands_its_states_to_dbt_as_a_var_and_the_hook_reads_it(tmp_path,
                                                                                capsys):
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}], SCHEMA)
    handed = []

    def recording_dbt(settings, command, *args, extra_vars=None):
        handed.append(dict(extra_vars or {}))
        return invoke_dbt(settings, command, *args, extra_vars=extra_vars)

    service.dbt = recording_dbt
    service.settings = replace(service.settings, warm=True)
    service.run()
    zone.write("T", 2, [{"id": 1, "v": "b", ROW_MARKER: 1}], SCHEMA)
    service.run()
    location = str(service.settings.layout.mirrored_path("dbo", "t"))
    assert handed[0] == {STATES_VAR: {}}
    assert list(handed[1][STATES_VAR]) == [location]

    # The settings hook's reader takes the state from the var, not from the table.
    state = {"configuration": {"delta.appendOnly": "true"},
             "protocol": {"minReaderVersion": 1, "minWriterVersion": 2, "readerFeatures": [],
                          "writerFeatures": []}}
    (service.settings.project_dir / "macros" / "probe.sql").write_text(
        "{% macro probe() %}{% do print(tojson(lakemirror._known_delta_state('"
        + location + "'))) %}{% endmacro %}")
    capsys.readouterr()
    service.settings = replace(service.settings, quiet=False, warm=False)
    results = invoke_dbt(service.settings, "run-operation", "probe",
                         extra_vars={STATES_VAR: {location: state}})
    assert not any(node.failed for node in results), results
    printed = re.findall(r"^\{.*\}$", capsys.readouterr().out, re.MULTILINE)
    assert json.loads(printed[0])["configuration"] == {"delta.appendOnly": "true"}


def test_a_new_process_hands_its_first_build_the_states_the_warehouse_saved(tmp_path):
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}], SCHEMA)
    service.run()
    handed = []

    def recording_dbt(settings, command, *args, extra_vars=None):
        handed.append(dict(extra_vars or {}))
        return invoke_dbt(settings, command, *args, extra_vars=extra_vars)

    next_process = MirrorService(service.settings, dbt=recording_dbt)  # has read nothing
    zone.write("T", 2, [{"id": 1, "v": "b", ROW_MARKER: 1}], SCHEMA)
    assert [s.status for s in next_process.run()] == ["replicating"]
    location = service.settings.layout.mirrored_path("dbo", "t")
    assert handed[0][STATES_VAR] == {str(location): {
        "configuration": dict(DeltaTable(str(location)).metadata().configuration),
        "protocol": handed[0][STATES_VAR][str(location)]["protocol"]}}
    assert handed[0][STATES_VAR][str(location)]["protocol"]["minReaderVersion"] >= 1
