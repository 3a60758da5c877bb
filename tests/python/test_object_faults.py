"""A warehouse on moto's S3 server behind a proxy that fails chosen requests (fault_proxy.py),
through the CLI on the embedded engine: lakemirror's own requests (delta-rs, obstore) and the
engine's (Sail, pointed at the proxy by its environment) both go through it. Transient faults
(a 503, a 429, a lost connection, a request held past the client's timeout, a write applied
whose answer was lost) are absorbed by object_store's retries; a persistent one fails only its
table, and the next run, the fault gone, recovers. Runs killed at random moments leave nothing
lost or applied twice either. Every mirrored table ends exactly as the
reference model says, and each file was staged once."""

import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakemirror.delta.rows import read_table
from lakemirror.landing.changes import POSITION

from fault_proxy import Fault, fault_proxy
from test_mistakes import FILES, FOLDERS, statuses
from test_object_mirror import object_mirror

TIMEOUT = 3  # seconds: the storage option `timeout` of the tests' requests


@pytest.fixture
def proxied(tmp_path, monkeypatch, s3_server):
    """A two-table mirror (object_mirror) whose warehouse is reached through a fault proxy."""
    with fault_proxy(s3_server.endpoint) as proxy:
        server = dataclasses.replace(s3_server, options={
            **s3_server.options, "endpoint": proxy.endpoint, "timeout": f"{TIMEOUT}s"})
        yield object_mirror(tmp_path, monkeypatch, server), proxy


def log_put(table: str) -> str:
    """The path pattern of a commit (a `_delta_log` JSON) of `table` (`dbo/customers`, ...)."""
    return rf"/{table}/_delta_log/\d{{20}}\.json$"


def assert_exact_and_staged_once(setup, files=2):
    """Every table mirrors the reference model's state of its first `files` files, and holds
    each of their rows once in staging (by change position)."""
    landed = sum(len(rows) for rows in FILES[:files])
    for folder, (schema, table) in FOLDERS.items():
        setup.assert_exact(folder, files=files)
        positions = read_table(setup.warehouse / "_lakemirror/staging" / schema / table
                               )[POSITION].to_pylist()
        assert len(positions) == len(set(positions)) == landed, (folder, positions)


def test_faults_are_retried_and_one_that_persists_fails_only_its_table(proxied):
    """Transient faults on one table's requests (and the run's shared ones), a persistent one
    on the other's staging commit; then a run without them, whose engine is throttled once.
    A commit whose answer was lost is retried, the store refuses the retry (the version
    exists), and the writer commits the same files again as the next version: a Delta log
    replay keeps one add per file, so the rows are there once."""
    setup, proxy = proxied
    proxy.set(
        Fault("PUT", log_put("_lakemirror/staging/dbo/customers"), 503),  # staging's commit
        Fault("PUT", log_put("_lakemirror/staging/dbo/customers"), "drop-after", nth=2),
        Fault("PUT", log_put("dbo/customers"), "drop-after"),  # the engine's commit
        Fault("PUT", "/_lakemirror/staging/dbo/customers/part-", "drop"),  # connection lost
        Fault("GET", "/dbo/customers/_delta_log/", "drop", nth=2),  # an engine's read
        Fault("PUT", "/_lakemirror/control/relations/part-", "delay", seconds=TIMEOUT + 2),
        Fault("PUT", "/_lakemirror/landing_zone.json", "drop-after"),  # applied, answer lost
        Fault("PUT", log_put("_lakemirror/staging/sales/orders"), 503, times=0))  # persists
    failed = setup.run()
    assert failed.exit_code == 1, failed.output
    assert statuses(failed) == {"dbo.customers": "replicating", "sales.orders": "failed"}
    assert "503" in failed.output and "sales.orders" in failed.output
    assert [fault.hits for fault in proxy.faults()] == [1, 1, 1, 1, 1, 1, 1, 6]  # 5 retries
    setup.assert_exact("Customers", files=2)
    proxy.set(Fault("PUT", log_put("sales/orders"), 429))  # the engine's commit, throttled
    recovered = setup.run()
    assert recovered.exit_code == 0, recovered.output
    assert [fault.hits for fault in proxy.faults()] == [1]
    assert_exact_and_staged_once(setup)


def test_runs_killed_at_random_moments_leave_nothing_lost_or_applied_twice(
        tmp_path, monkeypatch, s3_server):
    """`lakemirror run` processes (their engines with them) SIGKILLed after random delays
    (seeded: LAKEMIRROR_KILL_SEED replays a failure), a file landing between them, leave
    leases that expire in 2 s: the next run ends every table exactly as the reference model
    says, each row staged once."""
    setup = object_mirror(tmp_path, monkeypatch, s3_server)
    monkeypatch.setenv("LAKEMIRROR_LEASE_SECONDS", "2")
    seed = int(os.environ.get("LAKEMIRROR_KILL_SEED") or time.time())
    delays = random.Random(seed).sample(range(2, 16), 2)
    print(f"LAKEMIRROR_KILL_SEED={seed}: kills after {delays} s")
    command = [str(Path(sys.executable).parent / "lakemirror"), "run", "--landing-zone",
               str(setup.zone.root), "--warehouse", str(setup.warehouse), "--project-dir",
               str(setup.project)]
    for round, delay in enumerate(delays):
        runner = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            runner.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
        if round == 0:
            for folder in FOLDERS:
                setup.publish(folder, 3)  # the next runner finds a new file
    after = setup.run()
    assert after.exit_code == 0, after.output
    assert_exact_and_staged_once(setup, files=3)
