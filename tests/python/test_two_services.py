"""Two services in one process, on two warehouses and in two threads, each see only their own
run: their own tables, rows and remembered Delta states, and their own probes of a Spark Connect
server's reach (issue 40)."""

import threading
from dataclasses import replace
from types import SimpleNamespace

import pyarrow as pa

from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.run import server_storage
from lakemirror.storage.location import parse_location

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
        layout = service.settings.layout
        assert list(service.known_states.current(warehouse, layout.storage)) == [
            str(warehouse / "dbo" / tag)]
        other = setups["right" if tag == "left" else "left"][1].settings.layout
        assert service.known_states.current(other.root, other.storage) == {}


class ProbedServer:
    """A Spark Connect server that reaches every store: its session records the warehouses
    that probes read through it."""

    def __init__(self):
        self.probed = []

    def session(self, url, *, timeout):
        reader = SimpleNamespace(format=lambda _: SimpleNamespace(
            load=lambda location: self.probed.append(location) or SimpleNamespace(schema=[])))
        return SimpleNamespace(version="4.0.1", read=reader)  # the version: the access check


def _connect_service(root, warehouse):
    _, service = mirror_setup(root, "connect")
    settings = service.settings
    service.settings = replace(settings, warehouse=parse_location(warehouse),
                               env=replace(settings.env, connect_url="sc://localhost:15002"))
    return service


def test_each_service_asks_the_server_to_reach_its_own_warehouse(tmp_path, monkeypatch):
    """Two services in two threads probe their warehouses once each however often they run;
    a third on the first one's warehouse probes it again: no service knows another's probe."""
    server = ProbedServer()
    monkeypatch.setattr(server_storage, "connect_session", server.session)
    monkeypatch.setattr(server_storage, "answers", lambda address: True)
    left, right, again = (_connect_service(tmp_path / name, f"s3://bucket/{warehouse}")
                          for name, warehouse in (("l", "left"), ("r", "right"), ("a", "left")))

    def probe_twice(service):
        for _ in range(2):
            server_storage.check_server_storage(service.settings, service.reached_storage)

    threads = [threading.Thread(target=probe_twice, args=(service,)) for service in (left, right)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(server.probed) == ["s3://bucket/left", "s3://bucket/right"]
    probe_twice(again)
    assert server.probed[2:] == ["s3://bucket/left"]
    assert again.reached_storage == left.reached_storage == {
        ("sc://localhost:15002", "s3://bucket/left")}
