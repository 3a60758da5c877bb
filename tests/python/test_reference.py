"""The plain-Python reference model on the open mirroring contract's own examples."""

import pytest

from lakemirror.reference import ROW_MARKER, ReferenceError, apply_changes

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
    with pytest.raises(ReferenceError, match="keyColumns"):
        apply_changes([[{"v": 1, M: marker}]], [])


def test_unknown_marker_is_rejected():
    with pytest.raises(ReferenceError, match="invalid"):
        apply_changes([[{"id": 1, M: 3}]], ["id"])
