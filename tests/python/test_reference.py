"""The plain-Python reference model on the open mirroring contract's own examples."""

import pytest

from lakemirror.contract import ROW_MARKER
from lakemirror.reference import ContractViolation, apply_changes

M = ROW_MARKER


def test_update_moves_employee_from_redmond_to_bellevue():
    initial = [{"EmployeeID": "E0001", "EmployeeLocation": "Redmond"}]
    changes = [[{"EmployeeID": "E0001", "EmployeeLocation": "Bellevue", M: 1}]]
    assert apply_changes(changes, ["EmployeeID"], initial=initial) == [
        {"EmployeeID": "E0001", "EmployeeLocation": "Bellevue"}]


def test_key_change_is_delete_plus_insert():
    initial = [{"EmployeeID": "E0001", "EmployeeLocation": "Bellevue"}]
    changes = [[{"EmployeeID": "E0001", "EmployeeLocation": None, M: 2},
                {"EmployeeID": "E0002", "EmployeeLocation": "Bellevue", M: 0}]]
    assert apply_changes(changes, ["EmployeeID"], initial=initial) == [
        {"EmployeeID": "E0002", "EmployeeLocation": "Bellevue"}]


def test_insert_of_existing_key_adds_a_second_row():
    changes = [[{"id": 1, "v": "a", M: 0}], [{"id": 1, "v": "b", M: 0}]]
    assert apply_changes(changes, ["id"]) == [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}]


def test_update_and_upsert_of_missing_key_insert_and_replace_all_rows():
    changes = [[{"id": 1, "v": "a", M: 1}, {"id": 2, "v": "x", M: 0}, {"id": 2, "v": "y", M: 0},
                {"id": 2, "v": "z", M: 4}]]
    assert apply_changes(changes, ["id"]) == [{"id": 1, "v": "a"}, {"id": 2, "v": "z"}]


def test_delete_of_missing_key_is_a_no_op_and_file_without_marker_inserts():
    changes = [[{"id": 1, "v": "a"}], [{"id": 9, "v": None, M: 2}]]
    assert apply_changes(changes, ["id"]) == [{"id": 1, "v": "a"}]


def test_composite_keys_and_last_change_wins_in_row_order():
    changes = [[{"a": 1, "b": "x", "v": 1, M: 4}, {"a": 1, "b": "y", "v": 2, M: 4},
                {"a": 1, "b": "x", "v": 3, M: 1}, {"a": 1, "b": "y", "v": None, M: 2}]]
    assert apply_changes(changes, ["a", "b"]) == [{"a": 1, "b": "x", "v": 3}]


@pytest.mark.parametrize("marker", [1, 2, 4])
def test_updates_and_deletes_need_keys(marker):
    with pytest.raises(ContractViolation, match="keyColumns"):
        apply_changes([[{"v": 1, M: marker}]], [])


def test_unknown_marker_is_rejected():
    with pytest.raises(ContractViolation, match="invalid"):
        apply_changes([[{"id": 1, M: 3}]], ["id"])


def test_upsert_default_marker_for_files_without_marker():
    changes = [[{"id": 1, "v": "a"}], [{"id": 1, "v": "b"}]]
    assert apply_changes(changes, ["id"], default_marker=4) == [{"id": 1, "v": "b"}]


def test_conditional_column_highest_value_wins_ties_by_position():
    changes = [[{"id": 1, "ts": 5, "v": "a", M: 4}, {"id": 1, "ts": 3, "v": "late", M: 1},
                {"id": 1, "ts": 5, "v": "tie", M: 1}]]
    assert apply_changes(changes, ["id"], conditional_column="ts") == [
        {"id": 1, "ts": 5, "v": "tie"}]


def test_conditional_column_late_old_change_never_overwrites_or_resurrects():
    changes = [[{"id": 1, "ts": 10, "v": "new", M: 4}], [{"id": 1, "ts": 2, "v": "old", M: 1},
                                                         {"id": 1, "ts": 1, "v": None, M: 2}],
               [{"id": 2, "ts": 9, "v": None, M: 2}], [{"id": 2, "ts": 8, "v": "old", M: 4}]]
    assert apply_changes(changes, ["id"], conditional_column="ts") == [
        {"id": 1, "ts": 10, "v": "new"}]


def test_conditional_column_null_is_lowest():
    changes = [[{"id": 1, "ts": None, "v": "a", M: 4}, {"id": 1, "ts": 1, "v": "b", M: 1},
                {"id": 1, "ts": None, "v": "c", M: 1}]]
    assert apply_changes(changes, ["id"], conditional_column="ts") == [
        {"id": 1, "ts": 1, "v": "b"}]


def test_columns_evolve_added_columns_read_null_and_an_update_replaces_the_whole_row():
    files = [
        [{"id": 1, "a": "x", M: 0}, {"id": 2, "a": "y", M: 0}],
        [{"id": 1, "b": 5, M: 1}, {"id": 3, "a": "z", "b": 6, M: 4}],
    ]
    assert sorted(apply_changes(files, ["id"]), key=lambda row: row["id"]) == [
        {"id": 1, "a": None, "b": 5},
        {"id": 2, "a": "y", "b": None},
        {"id": 3, "a": "z", "b": 6},
    ]
