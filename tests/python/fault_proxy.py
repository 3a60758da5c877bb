"""A small HTTP proxy for the fault tests, in front of an object-store server (moto's S3):
it forwards every request and, by rule, answers a chosen one itself with an error status
(500, 503, 429), holds it past the client's timeout before forwarding it, or drops the
connection without an answer (before forwarding the request, or after: then the server applied
it and the client never learns). A client reaches the proxy through the storage option
`endpoint`; the proxy keeps the client's Host header, which the request's signature covers.

It runs in a process of its own (`python fault_proxy.py UPSTREAM`, printing its port): in the
test's process it would wait for the GIL that a delta-rs call holds while waiting for it. A
test sets the faults and reads what happened through `/__faults__` (PUT a JSON list of
`Fault`s; GET them back with their counts and every request's method and path).
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

CONTROL = "/__faults__"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te",
              "trailer", "upgrade"}
ERROR_CODES = {500: "InternalError", 503: "SlowDown", 429: "TooManyRequests"}


@dataclass
class Fault:
    """Hit the `nth` request (1: the first) whose method is `method` and whose path (with its
    query) matches the regular expression `path`, and the `times - 1` matching ones after it
    (times=0: every one from the nth on). `action`: an HTTP status (500, 503, 429), "delay"
    (wait `seconds`, then forward), "drop" (close the connection unanswered) or "drop-after"
    (forward, then close the connection unanswered)."""

    method: str
    path: str
    action: int | str
    nth: int = 1
    times: int = 1
    seconds: float = 0.0
    seen: int = 0  # matching requests so far
    hits: int = 0  # requests this fault acted on

    def applies(self, method: str, path: str) -> bool:
        if method != self.method or not re.search(self.path, path):
            return False
        self.seen += 1
        hit = self.seen >= self.nth and (self.times == 0 or self.seen < self.nth + self.times)
        self.hits += hit
        return hit


class FaultProxy(ThreadingHTTPServer):
    """The proxy's server: `faults` are checked in order, the first that applies acts;
    `requests` logs (method, path) of every request received."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (timed out, or told of a dropped connection)

    def fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            self.requests.append((method, path))
            return next((fault for fault in self.faults if fault.applies(method, path)), None)


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as object_store's client expects
    server: FaultProxy

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _handle(self) -> None:
        body = self._body()
        if self.path == CONTROL:
            self._control(body)
            return
        fault = self.server.fault(self.command, self.path)
        if fault is not None and isinstance(fault.action, int):
            self._answer(fault.action, [("Content-Type", "application/xml")], (
                f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
                f"{ERROR_CODES.get(fault.action, 'Error')}</Code><Message>injected by the "
                f"fault proxy</Message></Error>").encode())
            return
        if fault is not None and fault.action == "drop":
            self._drop()
            return
        if fault is not None and fault.action == "delay":
            time.sleep(fault.seconds)
        status, headers, answer = self._forward(body)
        if fault is not None and fault.action == "drop-after":
            self._drop()
            return
        self._answer(status, headers, answer)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    def _control(self, body: bytes) -> None:
        with self.server.lock:
            if self.command == "PUT":
                self.server.faults = [Fault(**fault) for fault in json.loads(body)]
            state = {"faults": [asdict(fault) for fault in self.server.faults],
                     "requests": self.server.requests}
        self._answer(200, [], json.dumps(state).encode())

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(*self.server.upstream, timeout=60)
        try:
            headers = {name: value for name, value in self.headers.items()
                       if name.lower() not in HOP_BY_HOP}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response_only(status)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP and not (
                    name.lower() == "content-length" and self.command != "HEAD"):
                self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.end_headers()

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class ProxyClient:
    """The test's side of a proxy process: its endpoint, and its faults and request log."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    def set(self, *faults: Fault) -> None:
        self._call("PUT", json.dumps([asdict(fault) for fault in faults]).encode())

    def faults(self) -> list[Fault]:
        return [Fault(**fault) for fault in self._call("GET")["faults"]]

    def requests(self) -> list[tuple[str, str]]:
        return [(method, path) for method, path in self._call("GET")["requests"]]

    def _call(self, method: str, body: bytes | None = None) -> dict[str, list]:
        with urlopen(Request(self.endpoint + CONTROL, data=body, method=method),
                     timeout=30) as answer:
            return json.loads(answer.read())


@contextmanager
def fault_proxy(upstream: str) -> Iterator[ProxyClient]:
    """A proxy process to `upstream` (http://host:port) until the block ends."""
    process = subprocess.Popen([sys.executable, __file__, upstream], stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None
        yield ProxyClient(f"http://127.0.0.1:{int(process.stdout.readline())}")
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    server = FaultProxy(sys.argv[1])
    print(server.server_address[1], flush=True)
    server.serve_forever()
