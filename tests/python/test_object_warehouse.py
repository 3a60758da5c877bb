"""The warehouse's storage in object storage (Azurite, moto's S3): the same keys, folders and
files as on disk, a move that finishes when repeated after a crash at any step, and locks that
are lease objects, one holder at a time across runners."""

import obstore
import pytest

from lakemirror.storage import parse_location
from lakemirror.storage.object_warehouse import ObjectWarehouse
from lakemirror.storage.warehouse import warehouse_storage


@pytest.fixture
def server(object_store_server):
    return object_store_server


@pytest.fixture
def storage(server):
    return warehouse_storage(parse_location(server.url(server.fresh_prefix("wh")),
                                            server.options))


def fill(storage, folder, count=3):
    for number in range(count):
        storage.write_text(f"{folder}/_delta_log/{number:020}.json", f"commit {number}")
    storage.write_text(f"{folder}/part-0.parquet", "data")


def test_keys_folders_and_files_as_on_disk(storage, server):
    assert isinstance(storage, ObjectWarehouse)
    assert storage.is_folder("") and storage.folders("") == [] and storage.files("x") == []
    storage.write_text("/_lakemirror//landing_zone.json", '{"zone": 1}')
    storage.write_text("dbo/customers/_delta_log/00000000000000000000.json", "{}")
    assert storage.read_text("_lakemirror/landing_zone.json") == '{"zone": 1}'
    assert storage.read_text("_lakemirror/absent.json") is None
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("_lakemirror/absent.json")
    assert storage.folders("") == ["_lakemirror", "dbo"]
    assert storage.files("_lakemirror") == ["landing_zone.json"]
    assert storage.files("dbo/customers/_delta_log") == ["00000000000000000000.json"]
    assert storage.exists("dbo/customers") and storage.is_folder("dbo/customers")
    assert storage.exists("_lakemirror/landing_zone.json")
    assert not storage.is_folder("_lakemirror/landing_zone.json") and not storage.exists("dbo/c")
    assert storage.location("dbo/customers").startswith(server.url(""))
    assert storage.location("dbo/customers").endswith("/dbo/customers")
    storage.remove("dbo")
    storage.remove_empty("dbo/customers", "")
    assert storage.folders("") == ["_lakemirror"]


def test_a_table_folder_is_its_own_storage(storage):
    fill(storage, "dbo/orders")
    table = warehouse_storage(parse_location(storage.location("dbo/orders"),
                                             dict(storage.root.options)))
    assert table.files("_delta_log") == [f"{n:020}.json" for n in range(3)]


def test_a_move_replaces_the_destination(storage):
    fill(storage, "dbo/orders")
    storage.write_text("_lakemirror/dropped/orders/stale.parquet", "old")
    storage.move("dbo/orders", "_lakemirror/dropped/orders")
    assert not storage.exists("dbo/orders")
    assert storage.files("_lakemirror/dropped/orders") == ["part-0.parquet"]
    assert storage.read_text("_lakemirror/dropped/orders/_delta_log/00000000000000000002.json"
                             ) == "commit 2"
    assert storage.folders("_lakemirror") == ["dropped"]  # no journal left
    storage.move("dbo/orders", "_lakemirror/dropped/orders")  # done already: nothing
    assert storage.files("_lakemirror/dropped/orders") == ["part-0.parquet"]


@pytest.mark.parametrize("crash", ["copy", "delete"])
@pytest.mark.parametrize("after", [0, 2])
def test_a_move_cut_short_finishes_when_repeated(storage, monkeypatch, crash, after):
    fill(storage, "dbo/orders")
    storage.write_text("_lakemirror/dropped/orders/stale.parquet", "old")
    real = getattr(obstore, crash)
    calls = []

    def cut_short(*args, **kwargs):
        if args[1].startswith("dbo/orders/") and len(calls) >= after:
            raise ConnectionError("killed")
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(obstore, crash, cut_short)
    with pytest.raises(ConnectionError):
        storage.move("dbo/orders", "_lakemirror/dropped/orders")
    monkeypatch.setattr(obstore, crash, real)
    storage.move("dbo/orders", "_lakemirror/dropped/orders")
    assert not storage.exists("dbo/orders")
    assert storage.files("_lakemirror/dropped/orders/_delta_log") == [
        f"{n:020}.json" for n in range(3)]
    assert storage.files("_lakemirror/dropped/orders") == ["part-0.parquet"]
    assert storage.folders("_lakemirror") == ["dropped"]


def test_a_lock_is_a_lease_held_once_until_released(storage, server):
    held = storage.try_lock("dbo.t")
    assert held is not None and not held.lost
    other = warehouse_storage(parse_location(storage.location(""), server.options))
    assert other.try_lock("dbo.t") is None
    assert other.files("_lakemirror/locks") == ["dbo.t.lease"]
    other.try_lock("dbo.u").release()
    held.release()
    again = other.try_lock("dbo.t")
    assert again is not None
    again.release()
