"""Object-store servers on loopback for the tests: Azurite (Microsoft's Azure Storage emulator,
npm `azurite@3.35.0`) and moto's S3 server (PyPI `moto[server]`), each started on a free port
in its own process group, given one container or bucket, and stopped by process id.

A test reaches a server through `ObjectServer`: a fresh prefix per test, that prefix's URL
(`az://lakemirror/<prefix>`, `s3://lakemirror/<prefix>`) and the storage options lakemirror
needs for it (the same names delta-rs and obstore take). Azurite is driven in emulator mode
(`use_emulator` plus `AZURITE_BLOB_STORAGE_URL`): it ignores `startFrom` in listings, which
emulator mode does not send.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

from spark_cluster import listens, wait_until

from spark_cluster import free_port

CONTAINER = "lakemirror"  # the container (Azurite) or bucket (moto) every test shares
AZURITE_VARIABLE = "LAKEMIRROR_AZURITE"  # the azurite-blob program, where it is not installed
AZURITE_URL_VARIABLE = "AZURITE_BLOB_STORAGE_URL"  # read by object_store in emulator mode
# Azurite's well-known development account (public, in Microsoft's Azurite documentation).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
               "K1SZFPTOtr/KBHBeksoGMGw==")
AZURE_API_VERSION = "2021-10-04"
_prefixes = itertools.count(1)


@dataclass(frozen=True)
class ObjectServer:
    """A running object-store server with one container or bucket."""

    kind: str  # "azurite" or "s3"
    scheme: str  # "az" or "s3"
    endpoint: str  # http://127.0.0.1:<port>
    options: Mapping[str, str]  # storage options for lakemirror, obstore and delta-rs
    environment: Mapping[str, str] = field(default_factory=dict)  # set for the session

    def fresh_prefix(self, name: str = "zone") -> str:
        """A key prefix no other test of this session uses."""
        return f"{name}-{os.getpid()}-{next(_prefixes)}"

    def url(self, prefix: str = "") -> str:
        """The URL of `prefix` in the server's container or bucket."""
        return f"{self.scheme}://{CONTAINER}/{prefix}".rstrip("/")

    def store(self, prefix: str = "") -> Any:
        """An obstore store on `prefix`, for a test to write or read objects directly."""
        from lakemirror.storage import open_store, parse_location

        return open_store(parse_location(self.url(prefix), self.options))


def server_unavailable(kind: str) -> str | None:
    """Why the `kind` server cannot start here, or None."""
    if kind == "azurite" and azurite_program() is None:
        return (f"azurite-blob not found: run `make install` (npm azurite@3.35.0 into "
                f"$(VENV)/node) or set {AZURITE_VARIABLE} to the azurite-blob program")
    if kind == "s3" and moto_program() is None:
        return "moto_server not found: run `make install` (PyPI moto[server], the dev extra)"
    return None


def azurite_program() -> str | None:
    """azurite-blob: LAKEMIRROR_AZURITE, else the venv's node folder (make install), else PATH."""
    configured = os.environ.get(AZURITE_VARIABLE)
    if configured:
        return configured if Path(configured).is_file() else None
    installed = Path(sys.prefix) / "node" / "node_modules" / ".bin" / "azurite-blob"
    return str(installed) if installed.is_file() else shutil.which("azurite-blob")


def moto_program() -> str | None:
    installed = Path(sys.prefix) / "bin" / "moto_server"
    return str(installed) if installed.is_file() else shutil.which("moto_server")


@contextmanager
def running(command: list[str], port: int, log: Path, what: str) -> Iterator[None]:
    """Run `command` in its own process group, in the log's folder, until the block ends, once
    it listens on `port`."""
    with open(log, "wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=log.parent,
                                   start_new_session=True)
    try:
        wait_until(lambda: listens(port), process, log, f"{what} listens on {port}")
        yield
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the process group `process` leads (node's or werkzeug's children go with it)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def azurite_server(logs: Path) -> Iterator[ObjectServer]:
    """Azurite's blob service on a free loopback port, in memory, with container `lakemirror`."""
    program = azurite_program()
    assert program is not None, server_unavailable("azurite")
    port = free_port()
    command = [program, "--blobHost", "127.0.0.1", "--blobPort", str(port),
               "--inMemoryPersistence", "--silent", "--disableTelemetry"]
    with running(command, port, logs / "azurite.log", "azurite"):
        endpoint = f"http://127.0.0.1:{port}"
        create_container(endpoint, CONTAINER)
        yield ObjectServer("azurite", "az", endpoint, {
            "use_emulator": "true", "account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY},
            {AZURITE_URL_VARIABLE: endpoint})


def create_container(endpoint: str, name: str) -> None:
    """Create a blob container with a SharedKey-signed request (obstore has no such call)."""
    date = formatdate(usegmt=True)
    signed = (f"PUT\n{chr(10) * 11}x-ms-date:{date}\nx-ms-version:{AZURE_API_VERSION}\n"
              f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{name}\nrestype:container")
    signature = base64.b64encode(hmac.new(base64.b64decode(AZURITE_KEY), signed.encode(),
                                          hashlib.sha256).digest()).decode()
    request = urllib.request.Request(
        f"{endpoint}/{AZURITE_ACCOUNT}/{name}?restype=container", method="PUT",
        headers={"x-ms-date": date, "x-ms-version": AZURE_API_VERSION,
                 "Authorization": f"SharedKey {AZURITE_ACCOUNT}:{signature}"})
    with urllib.request.urlopen(request, timeout=30):
        pass


@contextmanager
def s3_server(logs: Path) -> Iterator[ObjectServer]:
    """moto's S3 server on a free loopback port with bucket `lakemirror`; conditional puts
    (If-None-Match) and copy-if-absent (multipart, as on AWS) switched on."""
    program = moto_program()
    assert program is not None, server_unavailable("s3")
    port = free_port()
    with running([program, "-H", "127.0.0.1", "-p", str(port)], port, logs / "moto.log", "moto"):
        endpoint = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{CONTAINER}",
                                                           method="PUT"), timeout=30):
            pass
        yield ObjectServer("s3", "s3", endpoint, {
            "endpoint": endpoint, "allow_http": "true", "region": "us-east-1",
            "access_key_id": "lakemirror-test", "secret_access_key": "lakemirror-test",
            "conditional_put": "etag", "copy_if_not_exists": "multipart"})
