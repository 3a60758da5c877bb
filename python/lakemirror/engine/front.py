"""The embedded engine's front door: the loopback port clients connect to. A connection is let
through to Sail only once its first request carries the engine's token (`authorization: Bearer
<token>`, which Spark Connect clients send for `;token=` in their URL or
SPARK_CONNECT_AUTHENTICATE_TOKEN); from then on its bytes are relayed as they are, both ways,
so every method, its metadata, deadline, answers and errors reach each side unchanged.

Checking a connection rather than each call is as strict: a TCP connection is its client's
alone, so whoever sent the token once sends every later request on it. It is also what keeps
the front cheap: a gRPC proxy in Python, which re-sends each call, cost 5 to 10 ms per query
(a query is several calls), where relaying bytes costs a fraction of a millisecond.

Only the first request's headers are read (HTTP/2 frames, HPACK-decoded); a connection without
the token is answered with gRPC's UNAUTHENTICATED and the fix, and closed: nothing it sent
reaches Sail."""

from __future__ import annotations

import hmac
import socket
import threading
from collections.abc import Callable
from contextlib import suppress

from hpack import Decoder, Encoder, HPACKError

from lakemirror.engine.access import refusal

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # every HTTP/2 client's first bytes
_HEADERS, _SETTINGS, _GOAWAY, _CONTINUATION = 0x1, 0x4, 0x7, 0x9  # frame types
_END_STREAM, _ACK, _END_HEADERS, _PADDED, _PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20  # flags
_MOST_BEFORE_REQUEST = 1 << 20  # bytes a client may send before its first request's headers
_FIRST_REQUEST_SECONDS = 30.0  # how long a client may take to send them
_UNAUTHENTICATED = 16  # gRPC's status code


class TokenFront:
    """Listens on the loopback addresses at `port` (0: a free one) and relays each connection
    whose first request carries `token` to Sail, over a socket `connect_sail()` opens; the
    others are refused, naming the token's file (`refusal_file(port)`)."""

    def __init__(self, port: int, token: str, connect_sail: Callable[[], socket.socket], *,
                 refusal_file: Callable[[int], str]) -> None:
        # [::1] too: a client given `localhost` may try it first, and whoever listened there
        # would be sent the token
        hosts = ("127.0.0.1", "::1") if _has_ipv6_loopback() else ("127.0.0.1",)
        self._listeners = _listeners(hosts, port)
        self.port: int = self._listeners[0].getsockname()[1]
        self._expected = f"Bearer {token}".encode()
        self._refused = refusal(refusal_file(self.port))
        self._connect_sail = connect_sail
        for listener in self._listeners:
            threading.Thread(target=self._accept, args=(listener,), name="front",
                             daemon=True).start()

    def stop(self) -> None:
        for listener in self._listeners:
            listener.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.settimeout(_FIRST_REQUEST_SECONDS)
            try:
                opening = _Opening(client)
                stream, headers = opening.first_request()
                if not self._authorized(headers):
                    _refuse(client, stream, self._refused)
                    return
                received = opening.for_sail()
                sail = self._connect_sail()
            except (OSError, ValueError):
                return  # not an HTTP/2 client, one that went away, or Sail is gone
            client.settimeout(None)
            with sail:
                sail.sendall(received)
                back = threading.Thread(target=_pump, args=(sail, client), daemon=True)
                back.start()
                _pump(client, sail)
                back.join()

    def _authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        given = [value for name, value in headers if name == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self._expected)


class _Opening:
    """The start of a client's connection, read frame by frame: up to its first request's
    headers, then, once let in, up to its acknowledgment of the settings the front sent (a
    gRPC client sends no request before it has the server's settings; Sail sends its own, and
    the acknowledgment of the front's would be one too many for it)."""

    def __init__(self, client: socket.socket) -> None:
        self._client = client
        self._received = bytearray()
        self._offset = len(_PREFACE)
        self._kept = bytearray(_PREFACE)  # what Sail is to be sent: all but that ack
        self._acknowledged = False
        self._have(len(_PREFACE))
        if not self._received.startswith(_PREFACE):
            raise ValueError("not an HTTP/2 client")
        client.sendall(_frame(_SETTINGS, 0, 0))  # the defaults: Sail's own follow

    def _have(self, size: int) -> None:
        while len(self._received) < size:
            chunk = self._client.recv(1 << 16)
            if not chunk:
                raise ValueError("the client went away")
            self._received.extend(chunk)
            if len(self._received) > _MOST_BEFORE_REQUEST:
                raise ValueError("too much before the first request")

    def _next_frame(self) -> tuple[int, int, int, bytes]:
        """The next frame's type, flags, stream and payload; keeps it for Sail but the
        acknowledgment of the front's settings."""
        start = self._offset
        self._have(start + 9)
        length = int.from_bytes(self._received[start:start + 3], "big")
        kind, flags = self._received[start + 3], self._received[start + 4]
        stream = int.from_bytes(self._received[start + 5:start + 9], "big") & 0x7FFFFFFF
        self._have(start + 9 + length)
        self._offset = start + 9 + length
        if kind == _SETTINGS and flags & _ACK and not self._acknowledged:
            self._acknowledged = True
        else:
            self._kept.extend(self._received[start:self._offset])
        return kind, flags, stream, bytes(self._received[start + 9:self._offset])

    def first_request(self) -> tuple[int, list[tuple[bytes, bytes]]]:
        """The first request's stream and headers. ValueError for what is not HTTP/2, or
        sends too much before them."""
        stream, block = 0, bytearray()
        while True:
            kind, flags, frame_stream, payload = self._next_frame()
            if kind == _HEADERS and not stream:
                stream, payload = frame_stream, _fragment(payload, flags)
            elif not stream:
                continue  # settings, window updates, pings before the first request
            elif kind != _CONTINUATION or frame_stream != stream:
                raise ValueError("the first request's headers are interrupted")
            block.extend(payload)
            if flags & _END_HEADERS:
                try:
                    return stream, list(Decoder().decode(bytes(block), raw=True))
                except HPACKError as error:
                    raise ValueError(f"unreadable headers: {error}") from None

    def for_sail(self) -> bytes:
        """Everything read and to be read until the client acknowledged the front's
        settings, without that acknowledgment."""
        while not self._acknowledged:
            self._next_frame()
        return bytes(self._kept + self._received[self._offset:])


def _fragment(payload: bytes, flags: int) -> bytes:
    """The header block fragment of a HEADERS frame's payload (without padding, priority)."""
    if flags & _PADDED:
        payload = payload[1:len(payload) - payload[0]] if payload else b""
    return payload[5:] if flags & _PRIORITY else payload


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream.to_bytes(4, "big")
            + payload)


def _refuse(client: socket.socket, stream: int, message: str) -> None:
    """Answer the request on `stream` with gRPC's UNAUTHENTICATED and `message`, say the
    connection takes nothing more (GOAWAY), and close it once the client read that."""
    status = Encoder().encode([(":status", "200"), ("content-type", "application/grpc"),
                               ("grpc-status", str(_UNAUTHENTICATED)),
                               ("grpc-message", _percent_encoded(message))])
    with suppress(OSError):
        client.sendall(_frame(_SETTINGS, _ACK, 0)
                       + _frame(_HEADERS, _END_STREAM | _END_HEADERS, stream, status)
                       + _frame(_GOAWAY, 0, 0, stream.to_bytes(4, "big") + bytes(4)))
        client.shutdown(socket.SHUT_WR)
        client.settimeout(2.0)
        while client.recv(1 << 16):  # closing with unread bytes could lose the answer
            pass


def _percent_encoded(message: str) -> str:
    """`message` as gRPC's grpc-message header carries it."""
    return "".join(chr(byte) if 0x20 <= byte <= 0x7E and byte != 0x25 else f"%{byte:02X}"
                   for byte in message.encode())


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source`'s bytes to `sink` until `source` ends (then end `sink`'s writing) or
    either side fails (then end both)."""
    buffer = bytearray(1 << 16)
    view = memoryview(buffer)
    try:
        while size := source.recv_into(buffer):
            sink.sendall(view[:size])
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for end in (source, sink):
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening at host:port; OSError naming the address when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError as error:
        listener.close()
        raise OSError(error.errno, f"{error.strerror}: {host} port {port}") from None
    return listener


def _listeners(hosts: tuple[str, ...], port: int) -> list[socket.socket]:
    """Sockets listening at `port` (0: a port free on every one) of each of `hosts`."""
    for _attempt in range(1 if port else 50):
        first = _listen(hosts[0], port)
        chosen: int = first.getsockname()[1]
        try:
            return [first, *(_listen(host, chosen) for host in hosts[1:])]
        except OSError:
            first.close()
            if port:
                raise
    raise OSError(f"no port is free on every one of {', '.join(hosts)}")


def _has_ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False
