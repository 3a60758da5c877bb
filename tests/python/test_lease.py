"""Lease objects on real object-store servers (Azurite, moto's S3): one holder at a time, a
crashed holder's lease taken over once it expires (by exactly one of two runners), kept by
its heartbeat while held, and lost when someone else overwrites it."""

import json
import threading
import time

import obstore
import pytest

from lakemirror.storage.lease import try_lease

KEY = "_lakemirror/locks/dbo.customers.lease"


@pytest.fixture
def store(object_store_server):
    return object_store_server.store(object_store_server.fresh_prefix("lease"))


def leave(store, expires, holder="crashed-runner"):
    """A lease as a runner that stopped holding it (crashed, or gone) leaves it."""
    obstore.put(store, KEY, json.dumps({"holder": holder, "expires": expires}).encode())


def test_one_holder_at_a_time_and_the_next_takes_it_on_release(store):
    first = try_lease(store, KEY)
    assert first is not None and not first.lost
    assert try_lease(store, KEY) is None
    first.release()
    second = try_lease(store, KEY)
    assert second is not None and second.holder != first.holder
    second.release()


def test_a_crashed_holders_lease_is_taken_only_once_it_expires(store):
    leave(store, time.time() + 60)
    assert try_lease(store, KEY) is None
    leave(store, time.time() - 1)
    taken = try_lease(store, KEY)
    assert taken is not None
    assert json.loads(bytes(obstore.get(store, KEY).bytes()))["holder"] == taken.holder
    taken.release()


def test_of_two_runners_taking_over_an_expired_lease_one_wins(store):
    for _ in range(5):
        leave(store, time.time() - 1)
        start, results = threading.Barrier(2), []

        def take():
            start.wait()
            results.append(try_lease(store, KEY))

        runners = [threading.Thread(target=take) for _ in range(2)]
        for runner in runners:
            runner.start()
        for runner in runners:
            runner.join()
        winners = [lease for lease in results if lease is not None]
        assert len(winners) == 1, results
        winners[0].release()


def test_the_heartbeat_keeps_a_lease_past_its_duration(store):
    held = try_lease(store, KEY, seconds=1.5)
    assert held is not None
    deadline = time.time() + 3.5  # more than twice the duration
    while time.time() < deadline:
        assert try_lease(store, KEY) is None and not held.lost
        time.sleep(0.3)
    held.release()
    assert try_lease(store, KEY) is not None


def test_a_lease_overwritten_by_another_is_lost_and_left_to_it(store):
    held = try_lease(store, KEY, seconds=1.5)
    assert held is not None
    leave(store, time.time() + 60, holder="other-runner")
    deadline = time.time() + 3
    while not held.lost and time.time() < deadline:
        time.sleep(0.1)
    assert held.lost
    held.release()  # leaves the other runner's lease alone
    assert json.loads(bytes(obstore.get(store, KEY).bytes()))["holder"] == "other-runner"
