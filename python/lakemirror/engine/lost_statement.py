"""A statement the Spark Connect server lost is named as such, and never sent again.

pyspark sends each statement reattachably: when the connection breaks under its stream, it
asks the server to go on with the operation (ReattachExecute). Spark's server answers
INVALID_HANDLE.OPERATION_NOT_FOUND for an operation it never received, and pyspark then sends
the statement again. Sail (0.7) keeps an operation only from the end of its planning (it runs
DDL while planning) until it has sent its last answer, and says "operation not found" or
"task context not found for operation", words pyspark does not know: the statement may have
run, in whole, in part or not at all. That answer becomes a LostStatementError for that
statement alone (its model fails; the next run builds it again, and a mirror model's MERGE
skips the changes its table already holds). Reattachable execution stays on: it carries a
statement the server had taken across a broken connection, and its release calls keep Sail's
session alive during a long statement (Sail's heartbeats alone do not)."""

from __future__ import annotations

import re
from typing import Any

import grpc

from lakemirror.errors import LostStatementError

_REATTACH = "/spark.connect.SparkConnectService/ReattachExecute"
# Sail's answers; Spark's own (INVALID_HANDLE.OPERATION_NOT_FOUND) is pyspark's to handle.
_SAIL_LOST = re.compile(r"operation not found|task context not found for operation")


# gRPC applies an interceptor to the calls of the kinds it subclasses (it has no type hints).
class LostStatements(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Turns a server's answer that it has no record of a statement pyspark reattaches to
    into a LostStatementError naming the server (`where`: host:port)."""

    def __init__(self, where: str) -> None:
        self.where = where

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        answer = continuation(details, request)
        if details.method != _REATTACH:
            return answer
        return _Reattached(answer, self.where, request.operation_id)


class _Reattached:
    """A ReattachExecute call's stream of answers, with Sail's answer that it has no record
    of the operation turned into a LostStatementError; everything else is the call's."""

    def __init__(self, call: Any, where: str, operation: str) -> None:
        self._call = call
        self._where = where
        self._operation = operation

    def __iter__(self) -> _Reattached:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._call)
        except grpc.RpcError as error:
            if not _lost(error):
                raise
            raise _lost_statement(self._where, self._operation) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


def _lost(error: grpc.RpcError) -> bool:
    """Whether a reattach call's `error` is the server's answer that it has no record of the
    operation, or of its answers."""
    details = getattr(error, "details", None)
    text = details() if callable(details) else None
    return (isinstance(text, str) and "INVALID_HANDLE" not in text
            and _SAIL_LOST.search(text) is not None)


def _lost_statement(where: str, operation: str) -> LostStatementError:
    return LostStatementError(
        f"the engine at {where} lost a statement (operation {operation}): the connection to "
        "it broke while the statement was on it, and the engine has no record of it or of "
        "its answer, so whether it ran is unknown; it was not sent again",
        hint="run again: the next run builds this model again (a mirrored table skips the "
             "changes it already holds); if it keeps happening, check the machine's load and "
             "the engine's log (LAKEMIRROR_LOG=1)")
