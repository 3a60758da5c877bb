"""Two services in one process, on two warehouses and in two threads, each see only their own
run: their own tables, rows and remembered Delta states (issue 40)."""

import threading
from dataclasses import replace

import pyarrow as pa

from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import as_multiset, mirror_setup, mirrored_rows

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])


def _files(tag):
    return [[{"id": key, "v": f"{tag}{key}", M: 0} for key in range(5)],
            [{"id": 1, "v": f"{tag}-changed", M: 1}, {"id": 2, M: 2},
             {"id": 9, "v": f"{tag}-new", M: 4}]]


def test_two_warm_services_in_two_threads_mirror_only_their_own_zone(tmp_path):
    setups = {tag: mirror_setup(tmp_path / tag) for tag in ("left", "right")}
    for tag, (zone, service) in setups.items():
        zone.table(tag.title(), ["id"])
        service.settings = replace(service.settings, warm=True)
    errors = []

    def mirror(tag):
        zone, service = setups[tag]
        try:
            for sequence, rows in enumerate(_files(tag), start=1):
                zone.write(tag.title(), sequence, rows, SCHEMA)
                statuses = service.run()
                assert [(s.table, s.status) for s in statuses] == [(tag, "replicating")]
        except BaseException as error:  # reported by the main thread
            errors.append((tag, error))

    threads = [threading.Thread(target=mirror, args=(tag,)) for tag in setups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert errors == []
    for tag, (_, service) in setups.items():
        warehouse = service.settings.warehouse
        assert sorted(path.name for path in (warehouse / "dbo").iterdir()) == [tag]
        expected = apply_changes(_files(tag), ["id"])
        assert mirrored_rows(warehouse, "dbo", tag) == as_multiset(expected)
        assert list(service.known_states.current(warehouse)) == [str(warehouse / "dbo" / tag)]
        other = setups["right" if tag == "left" else "left"][1].settings.warehouse
        assert service.known_states.current(other) == {}
