"""A deadline on every call a Spark Connect client makes to its server: a server that accepted
a request and never answers it (an engine stuck under load) would keep gRPC, and dbt with it,
waiting forever. A call given no deadline of its own gets `seconds`; one that passes it fails
with an EngineError naming the fix, and so does every later call of the session, at once (a
stuck server answers none of them: waiting again would only hide the first failure)."""

from __future__ import annotations

from typing import Any, NamedTuple

import grpc

from lakemirror.errors import EngineError


class _Details(NamedTuple):
    """A call's details (gRPC reads them by name) with its deadline set."""

    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: bool | None
    compression: Any


# gRPC applies an interceptor to the calls of the kinds it subclasses (it has no type hints).
class Deadline(grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
               grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Gives each call of a channel to the server `where` (host:port) `seconds` to answer (to
    end, for a stream of results); `fix` is the hint of the error past it."""

    def __init__(self, seconds: float, where: str, fix: str) -> None:
        self.seconds = seconds
        self.where = where
        self.fix = fix
        self.missed: EngineError | None = None  # the first call that passed its deadline

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return self._call(continuation, details, request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return self._call(continuation, details, request)

    def _call(self, continuation: Any, details: Any, request: Any) -> Any:
        if self.missed is not None:
            raise self.missed
        if details.timeout is not None:  # the caller's own deadline
            return continuation(details, request)
        return _Answer(continuation(_Details(details.method, self.seconds, details.metadata,
                                             details.credentials, details.wait_for_ready,
                                             details.compression), request), self)

    def passed(self) -> EngineError:
        """The error of a call that passed the deadline this interceptor set (and of every
        later call)."""
        self.missed = EngineError(
            f"the engine at {self.where} did not answer a request within {self.seconds:g} s: "
            "it is stuck or overloaded", hint=self.fix)
        return self.missed


class _Answer:
    """A call's outcome (a unary answer, or a stream of them) as gRPC gives it, with a passed
    deadline turned into the interceptor's EngineError; everything else is the call's."""

    def __init__(self, call: Any, deadline: Deadline) -> None:
        self._call = call
        self._deadline = deadline

    def result(self, timeout: float | None = None) -> Any:
        try:
            return self._call.result(timeout)
        except grpc.RpcError as error:
            if _passed(error):
                raise self._deadline.passed() from None
            raise

    def __iter__(self) -> _Answer:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._call)
        except grpc.RpcError as error:
            if _passed(error):
                raise self._deadline.passed() from None
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


def _passed(error: grpc.RpcError) -> bool:
    code = getattr(error, "code", None)
    return callable(code) and code() == grpc.StatusCode.DEADLINE_EXCEEDED
