"""The warehouse in object storage: the bench's zone mirrored by `lakemirror run` (a cold
process, a fresh project) into a warehouse on local disk, then into one on moto's S3 server on
loopback, which this figure starts; the seconds of each, their ratio, and the requests the S3
run made (counted in moto's request log). moto is a dev extra (`moto[server]`): without it the
figure says so and measures nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from lakemirror.bench.contenders import private_project
from lakemirror.bench.generator import generate_zone
from lakemirror.bench.idle_run import lakemirror_command
from lakemirror.bench.reference_state import final_state, read_changes
from lakemirror.bench.spec import BenchSpec
from lakemirror.bench.verification import verify
from lakemirror.delta.rows import read_table
from lakemirror.engine.sail import EngineAddress, answers
from lakemirror.environment import STORAGE_OPTIONS, process_environment
from lakemirror.storage import parse_location

BUCKET = "bench"
# moto's options: conditional puts (the leases, Delta's commits) and copy-if-absent, as on AWS.
MOTO_OPTIONS = {"allow_http": "true", "region": "us-east-1", "access_key_id": "bench",
                "secret_access_key": "bench", "conditional_put": "etag",
                "copy_if_not_exists": "multipart"}
_REQUEST = re.compile(r'"(GET|PUT|POST|DELETE|HEAD) ')
MISSING = ("warehouse on S3: not measured: moto_server is not installed (the dev extra: "
           "pip install 'moto[server]')")


@dataclass(frozen=True)
class ObjectWarehouse:
    tables: int
    files: int
    disk_seconds: float
    s3_seconds: float
    requests: dict[str, int]  # the S3 run's, by method
    verified: bool
    message: str

    @property
    def ratio(self) -> float:
        return self.s3_seconds / self.disk_seconds

    def text(self) -> str:
        methods = ", ".join(f"{method} {count}" for method, count in sorted(self.requests.items()))
        return (f"warehouse on S3 (moto on loopback) against local disk, `lakemirror run` of "
                f"{self.tables} table(s) of {self.files + 1} files, cold: disk "
                f"{self.disk_seconds:.2f} s, S3 {self.s3_seconds:.2f} s ({self.ratio:.1f}x), "
                f"{sum(self.requests.values()):,} requests ({methods}); {self.message}")


def moto_program() -> str | None:
    installed = Path(sys.prefix) / "bin" / "moto_server"
    return str(installed) if installed.is_file() else shutil.which("moto_server")


def measure_object_warehouse(directory: Path, spec: BenchSpec,
                             progress: Callable[[str], None]) -> ObjectWarehouse | None:
    """Both runs on the same generated zone (generated again for the second, from the same
    seed), each verified against the reference state; None without moto."""
    program = moto_program()
    if program is None:
        return None
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    disk, _ = _mirror(directory / "disk", spec, str(directory / "disk" / "warehouse"), {})
    progress(f"warehouse on S3: local disk {disk:.2f} s")
    with moto_server(program, directory / "moto.log") as endpoint:
        options = {**MOTO_OPTIONS, "endpoint": endpoint}
        url = f"s3://{BUCKET}/warehouse"
        before = _requests(directory / "moto.log")
        s3, expected = _mirror(directory / "s3", spec, url, options)
        requests = _requests(directory / "moto.log") - before
        progress(f"warehouse on S3: moto {s3:.2f} s, {sum(requests.values())} requests")
        checks = [verify(rows, read_table(parse_location(f"{url}/dbo/{name}", options)),
                         sample=None) for name, rows in expected.items()]
    failed = [check.message for check in checks if not check.ok]
    return ObjectWarehouse(spec.tables, spec.files, disk, s3, dict(requests), not failed,
                           failed[0] if failed else "every table equals the reference")


def _mirror(directory: Path, spec: BenchSpec, warehouse: str,
            options: dict[str, str]) -> tuple[float, dict[str, pa.Table]]:
    """Seconds of one cold `lakemirror run` of a generated zone into `warehouse`, and each
    table's expected final rows."""
    tables = generate_zone(directory / "zone", spec)
    expected = {table.name.lower(): final_state(read_changes(table.files)) for table in tables}
    environment = process_environment({STORAGE_OPTIONS: json.dumps(options)})
    started = time.perf_counter()
    done = subprocess.run([*lakemirror_command(), "run", "--json", "--landing-zone",
                           str(directory / "zone" / "LandingZone"), "--warehouse", warehouse,
                           "--project-dir", str(private_project(directory / "project"))],
                          capture_output=True, text=True, env=environment)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"lakemirror run into {warehouse}: exit code {done.returncode}: "
                           f"{(done.stdout + done.stderr).strip()[-500:]}")
    return seconds, expected


def _requests(log: Path) -> Counter[str]:
    """Requests moto logged so far, by method."""
    return Counter(match[1] for line in log.read_text().splitlines()
                   if (match := _REQUEST.search(line)))


@contextmanager
def moto_server(program: str, log: Path) -> Iterator[str]:
    """moto's S3 server on a free loopback port, with bucket BUCKET, until the block ends;
    yields its endpoint. Its request log goes to `log`."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with open(log, "wb") as output:
        server = subprocess.Popen([program, "-H", "127.0.0.1", "-p", str(port)], stdout=output,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not answers(EngineAddress("127.0.0.1", port)):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto_server did not start: {log.read_text()[-500:]}")
            time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{BUCKET}",
                                                           method="PUT"), timeout=30):
            pass
        yield endpoint
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
