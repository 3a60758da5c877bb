"""The Delta states a service hands to its next build (lakemirror.delta.known_states):
only for a table still at the version read, never for one recreated meanwhile, never another
service's, and through dbt's vars."""

import json
import re
import shutil
from dataclasses import replace

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from lakemirror.delta.known_states import STATES_VAR, KnownStates
from lakemirror.reference import ROW_MARKER
from lakemirror.run.dbt import invoke_dbt

from conftest import mirror_setup

ROWS = pa.table({"id": [1, 2]})
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])


def test_a_state_is_handed_on_only_while_the_table_has_no_later_commit(tmp_path):
    table = tmp_path / "warehouse" / "dbo" / "t"
    write_deltalake(str(table), ROWS, configuration={"delta.appendOnly": "false"})
    write_deltalake(str(table), ROWS, mode="append")
    known = KnownStates()
    known.remember(table, DeltaTable(str(table)))
    assert known.current(tmp_path / "other") == {}
    assert known.current(tmp_path / "warehouse") == {str(table): {
        "configuration": {"delta.appendOnly": "false"},
        "protocol": {"minReaderVersion": 1, "minWriterVersion": 2, "readerFeatures": [],
                     "writerFeatures": []}}}

    # Another writer's commit.
    DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "true"})
    assert known.current(tmp_path / "warehouse") == {}

    # The table recreated up to the version read, with other properties.
    known.remember(table, DeltaTable(str(table)))
    assert list(known.current(tmp_path / "warehouse")) == [str(table)]
    shutil.rmtree(table)
    write_deltalake(str(table), ROWS, configuration={"delta.appendOnly": "false"})
    write_deltalake(str(table), ROWS, mode="append")
    write_deltalake(str(table), ROWS, mode="append")
    assert DeltaTable(str(table)).version() == 2
    assert known.current(tmp_path / "warehouse") == {}


def test_two_services_keep_their_own_states(tmp_path):
    first, second = tmp_path / "one" / "dbo" / "t", tmp_path / "two" / "dbo" / "t"
    for table in (first, second):
        write_deltalake(str(table), ROWS)
    mine, theirs = KnownStates(), KnownStates()
    mine.remember(first, DeltaTable(str(first)))
    theirs.remember(second, DeltaTable(str(second)))
    assert list(mine.current(tmp_path)) == [str(first)]
    assert list(theirs.current(tmp_path)) == [str(second)]


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
