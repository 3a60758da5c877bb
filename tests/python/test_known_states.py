"""The Delta states a run hands to the next build (lakemirror.delta.known_states): only for a
table still at the version read, never for one recreated meanwhile."""

import json
import shutil

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from lakemirror.delta import known_states
from lakemirror.delta.known_states import STATES_ENV, remember, remembered, states_env

ROWS = pa.table({"id": [1, 2]})


def known(location):
    return json.loads(states_env([location])[STATES_ENV]).get(str(location))


def test_a_state_is_handed_on_only_while_the_table_has_no_later_commit(tmp_path):
    table = tmp_path / "warehouse" / "dbo" / "t"
    write_deltalake(str(table), ROWS, configuration={"delta.appendOnly": "false"})
    write_deltalake(str(table), ROWS, mode="append")
    remember(table, DeltaTable(str(table)))
    assert remembered(tmp_path / "warehouse") == [table]
    assert remembered(tmp_path / "other") == []
    assert known(table) == {
        "configuration": {"delta.appendOnly": "false"},
        "protocol": {"minReaderVersion": 1, "minWriterVersion": 2, "readerFeatures": [],
                     "writerFeatures": []}}

    # Another writer's commit.
    DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "true"})
    assert known(table) is None

    # The table recreated up to the version read, with other properties.
    remember(table, DeltaTable(str(table)))
    assert known(table) is not None
    shutil.rmtree(table)
    write_deltalake(str(table), ROWS, configuration={"delta.appendOnly": "false"})
    write_deltalake(str(table), ROWS, mode="append")
    write_deltalake(str(table), ROWS, mode="append")
    assert DeltaTable(str(table)).version() == 2
    assert known(table) is None


def test_states_stop_before_the_variable_grows_too_long(tmp_path, monkeypatch):
    tables = [tmp_path / f"t{number}" for number in range(3)]
    for table in tables:
        write_deltalake(str(table), ROWS)
        remember(table, DeltaTable(str(table)))
    size = len(json.dumps({str(tables[0]): known(tables[0])}))
    monkeypatch.setattr(known_states, "MAX_ENV_CHARS", 2 * size + 2)
    assert sorted(json.loads(states_env(tables)[STATES_ENV])) == [str(t) for t in tables[:2]]
