"""A statement whose connection breaks under it. pyspark then reattaches to it
(ReattachExecute): a statement the engine had taken goes on and answers; one the engine has
no record of, or whose answer it no longer has, fails with a LostStatementError that says
so, for that statement alone, and is never sent again (engine.lost_statement)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from contextlib import suppress
from pathlib import Path

import grpc
import pytest

from lakemirror.engine import ChildEngine, close_connect_sessions, connect_session
from lakemirror.engine.access import save_token
from lakemirror.engine.lost_statement import LostStatements
from lakemirror.errors import LostStatementError

from conftest import copy_project

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # what an HTTP/2 client sends first
_DATA = 0x0  # HTTP/2's frame type of a message's bytes


class _Frames:
    """The HTTP/2 frames of one direction of a connection, as its bytes come: each complete
    frame's type, stream and payload."""

    def __init__(self, *, skip: int = 0) -> None:
        self._pending = bytearray()
        self._skip = skip

    def feed(self, chunk: bytes) -> list[tuple[int, int, bytes]]:
        self._pending.extend(chunk)
        if self._skip:
            skipped = min(self._skip, len(self._pending))
            del self._pending[:skipped]
            self._skip -= skipped
        frames = []
        while len(self._pending) >= 9:
            length = int.from_bytes(self._pending[:3], "big")
            if len(self._pending) < 9 + length:
                break
            stream = int.from_bytes(self._pending[5:9], "big") & 0x7FFFFFFF
            frames.append((self._pending[3], stream, bytes(self._pending[9:9 + length])))
            del self._pending[:9 + length]
        return frames


class BreakingRelay:
    """A TCP relay to the engine at `port` that breaks the connection carrying the statement
    whose text it is given (`break_at`): before the statement reaches the engine
    (`when="sent"`), or at the engine's first message in answer to it (`when="answered"`:
    the engine took it, and the client never gets that answer). Every other connection and
    byte is relayed as it is."""

    def __init__(self, port: int) -> None:
        self._engine = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._marker: bytes | None = None
        self._when = ""
        self._stream: tuple[socket.socket, int] | None = None  # the statement's, once sent
        self.broken = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def break_at(self, statement: str, *, when: str) -> None:
        self._marker, self._when = statement.encode(), when

    def _accept(self) -> None:
        with suppress(OSError):
            while True:
                client, _ = self._listener.accept()
                engine = socket.create_connection(("127.0.0.1", self._engine))
                threading.Thread(target=self._relay, args=(client, engine, client),
                                 daemon=True).start()
                threading.Thread(target=self._relay, args=(engine, client, client),
                                 daemon=True).start()

    def _relay(self, source: socket.socket, sink: socket.socket,
               client: socket.socket) -> None:
        sent = source is client
        frames = _Frames(skip=len(_PREFACE) if sent else 0)
        with suppress(OSError):
            while chunk := source.recv(1 << 16):
                if any(self._breaks(frame, client, sent) for frame in frames.feed(chunk)):
                    break
                sink.sendall(chunk)
        for end in (source, sink):
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def _breaks(self, frame: tuple[int, int, bytes], client: socket.socket,
                sent: bool) -> bool:
        """Whether the connection breaks at `frame` (once)."""
        kind, stream, payload = frame
        if self._marker is None or kind != _DATA:
            return False
        if sent and self._marker in payload:
            self._stream = (client, stream)
            breaks = self._when == "sent"
        else:
            breaks = not sent and self._when == "answered" and self._stream == (client, stream)
        if breaks:
            self._marker = None
            self.broken.set()
        return breaks


@pytest.fixture(scope="module")
def engine():
    started = ChildEngine()
    yield started
    started.kill()


@pytest.fixture
def relayed(engine):
    """A Spark Connect session as lakemirror makes it, on the engine through a BreakingRelay."""
    close_connect_sessions()
    relay = BreakingRelay(engine.address.port)
    session = connect_session(f"sc://localhost:{relay.port}", timeout=10, token=engine.token)
    yield relay, session
    close_connect_sessions()


def test_a_session_collected_inside_a_release_submit_leaves_the_release_pool_open(relayed):
    """pyspark shuts its shared release pool down when any Connect session is collected; a
    collection inside its submit (same thread, re-entrant lock) failed that statement with
    "cannot schedule new futures after shutdown". lakemirror's sessions guard the pool."""
    from pyspark.sql.connect.client.reattach import (
        ExecutePlanResponseReattachableIterator as Iterator,
    )

    pool = Iterator._get_or_create_release_thread_pool()
    with Iterator._lock:  # as pyspark's submit of a release holds it
        Iterator.shutdown()  # what a collected session's __del__ asks for
        assert pool.submit(lambda: "released").result() == "released"
    Iterator.shutdown()  # asked for outside a submit, it shuts the pool down
    assert Iterator._release_thread_pool_instance is None and pool._shutdown


def test_a_statement_the_engine_took_answers_across_a_broken_connection(relayed):
    relay, session = relayed
    query = "select count(distinct sha2(cast(id as string), 256)) as n from range(0, 1500000)"
    frame = session.sql(query)  # a query's text is only echoed; collecting runs it
    relay.break_at(query, when="answered")
    assert frame.collect()[0].n == 1_500_000
    assert relay.broken.is_set()


def test_a_statement_lost_on_its_way_fails_clearly_and_is_not_sent_again(relayed, tmp_path):
    relay, session = relayed
    table = tmp_path / "lost"
    statement = f"create table lost using delta location '{table}' as select 1 as id"
    relay.break_at(statement, when="sent")
    with pytest.raises(LostStatementError) as lost:
        session.sql(statement)
    assert relay.broken.is_set()
    assert "lost a statement" in str(lost.value) and "was not sent again" in str(lost.value)
    assert "run again" in str(lost.value)
    assert not table.exists()  # it never reached the engine, and was not sent again
    assert session.sql("select 2 as two").collect()[0].two == 2  # the session goes on


def test_a_statement_whose_answer_is_lost_fails_clearly_and_ran_once(relayed, tmp_path):
    relay, session = relayed
    session.sql(f"create table answered using delta location '{tmp_path / 't'}' "
                "as select 1 as id")
    statement = "insert into answered select id from range(0, 1000)"
    relay.break_at(statement, when="answered")
    with pytest.raises(LostStatementError, match="whether it ran is unknown"):
        session.sql(statement)
    assert relay.broken.is_set()
    assert session.sql("select count(*) as n from answered").collect()[0].n == 1001


def test_plain_dbt_fails_the_model_whose_statement_was_lost_and_builds_the_others(engine,
                                                                                  tmp_path):
    project = copy_project(tmp_path / "project")
    (project / "models" / "lost_one.sql").write_text("select 'statement-to-lose' as word\n")
    (project / "models" / "kept_one.sql").write_text("select 'kept' as word\n")
    relay = BreakingRelay(engine.address.port)
    relay.break_at("statement-to-lose", when="sent")
    save_token(tmp_path / "home", relay.port, engine.token)  # dbt reaches the engine by it
    run = subprocess.run(
        [str(Path(sys.executable).parent / "dbt"), "run", "--threads", "1",
         "--select", "lost_one", "kept_one"], cwd=project, capture_output=True, text=True,
        timeout=600, env={**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
                          "LAKEMIRROR_ENGINE_PORT": str(relay.port),
                          "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
                          "DBT_PROFILES_DIR": str(project / "profiles")})
    assert run.returncode == 1, run.stdout + run.stderr
    assert relay.broken.is_set()
    assert "lost a statement" in run.stdout and "it was not sent again" in run.stdout
    assert "ERROR=1" in run.stdout and "PASS=1" in run.stdout, run.stdout


class Refused(grpc.RpcError):
    def __init__(self, details):
        self._details = details

    def details(self):
        return self._details


class Details:
    method = "/spark.connect.SparkConnectService/ReattachExecute"


class Request:
    operation_id = "op-1"


def test_only_sails_answer_is_a_lost_statement_sparks_is_left_to_pyspark():
    """Spark's server names an operation it never received INVALID_HANDLE.OPERATION_NOT_FOUND,
    and pyspark then sends the statement again: that answer passes through unchanged."""
    def answering(details):
        return lambda _details, _request: Failing(Refused(details))

    lost = LostStatements("127.0.0.1:1")
    with pytest.raises(LostStatementError, match="operation op-1"):
        next(lost.intercept_unary_stream(
            answering("invalid argument: operation not found: op-1"), Details(), Request()))
    spark = ("[INVALID_HANDLE.OPERATION_NOT_FOUND] The handle op-1 is invalid. "
             "operation not found.")
    for details in (spark, "internal error: task failed while executing the plan"):
        with pytest.raises(Refused):
            next(lost.intercept_unary_stream(answering(details), Details(), Request()))


class Failing:
    """A call's stream that fails with `error` at its first answer."""

    def __init__(self, error):
        self.error = error

    def __iter__(self):
        return self

    def __next__(self):
        raise self.error
