"""A private network for the embedded engine's own listener (Linux network namespaces).

A socket belongs to the network namespace of the thread that called `socket()`. The engine
process keeps one thread in a namespace of its own, with only a loopback device: Sail's
listener, started from that thread, is reachable from nowhere else, while the threads Sail made
before (its runtime, in the host's namespace) still reach object stores. The same thread then
makes the sockets the process's forwarder connects to Sail with (`PrivateNetwork.socket`).

An unprivileged user needs a user namespace to make a network namespace: it is entered once,
while the process is single-threaded (`enter_user_namespace`), mapping the user's own ids so
every file keeps its owner.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import queue
import socket
import struct
import sys
import threading
from collections.abc import Callable

from lakemirror.errors import EngineError
from lakemirror.environment import ENGINE_ISOLATION, Isolation

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = "16sH14s"  # struct ifreq: the interface's name, then its flags


def _unshare(flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def enter_user_namespace() -> str | None:
    """For a user other than root, enter a user namespace that maps the user's own ids (its
    files keep their owner), in which a thread may then make a network namespace; call it while
    the process has one thread. Returns why that is impossible here, or None."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux's ({sys.platform} has none)"
    if os.geteuid() == 0:
        return None  # root may make network namespaces as it is
    uid, gid = os.geteuid(), os.getegid()
    try:
        _unshare(_CLONE_NEWUSER)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
    except OSError as error:
        return f"user namespaces are unavailable here ({_why(error)})"
    return None


def _why(error: OSError) -> str:
    if error.errno in (errno.EPERM, errno.EACCES):
        return ("refused: disabled (sysctl user.max_user_namespaces, "
                "kernel.unprivileged_userns_clone) or restricted (AppArmor's "
                "kernel.apparmor_restrict_unprivileged_userns)")
    return error.strerror or str(error)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack(_IFREQ, b"lo", 0, b"")
        flags = struct.unpack(_IFREQ, fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP, b""))


class PrivateNetwork:
    """A thread in a network namespace of its own with its loopback up: it runs what must
    listen there (`run`), then makes sockets in it on request (`socket`)."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], object],
                                                queue.SimpleQueue[object]]] = queue.SimpleQueue()
        entered: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, args=(entered,), name="private-network",
                         daemon=True).start()
        self.problem = entered.get()  # why the thread could not make its namespace, or None

    def _serve(self, entered: queue.SimpleQueue[str | None]) -> None:
        try:
            _unshare(_CLONE_NEWNET)
            _loopback_up()
        except OSError as error:
            entered.put(f"a network namespace could not be made ({_why(error)})")
            return
        entered.put(None)
        while True:
            work, reply = self._requests.get()
            try:
                reply.put(work())
            except Exception as error:  # handed to the caller, raised there
                reply.put(error)

    def run(self, work: Callable[[], object]) -> object:
        """`work()`'s result, run on the private thread (its exception raised here)."""
        reply: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._requests.put((work, reply))
        result = reply.get()
        if isinstance(result, Exception):
            raise result
        return result

    def socket(self) -> socket.socket:
        """A new TCP socket in the private network."""
        made = self.run(socket.socket)
        assert isinstance(made, socket.socket)
        return made


def check_isolation(mode: Isolation, problem: str | None) -> str | None:
    """Whether the engine can start with isolation `mode` when a private network is
    impossible for `problem` (None: it is possible): EngineError for `required`; the warning
    to print for `auto`; None when there is nothing to say."""
    if problem is None or mode == "off":
        return None
    if mode == "required":
        raise EngineError(f"the embedded engine cannot listen in a private network: {problem}",
                          hint="allow user namespaces for this user (or run lakemirror where "
                               f"they are allowed), or set {ENGINE_ISOLATION}=auto to run it "
                               "behind its token alone")
    return (f"warning: the embedded engine runs without a private network: {problem}; its "
            "token still guards its port, but other local users can reach Sail's own port "
            f"directly ({ENGINE_ISOLATION}=required refuses to start then)")


def private_network_problem() -> str | None:
    """Why this host gives the engine no private network, or None when it does: tried in a
    forked child, which leaves this process as it was."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - reports through the pipe
        try:
            problem = enter_user_namespace()
            if problem is None:
                try:
                    _unshare(_CLONE_NEWNET)
                except OSError as error:
                    problem = f"a network namespace could not be made ({_why(error)})"
            os.write(writer, (problem or "").encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        answer = pipe.read().decode()
    os.waitpid(child, 0)
    return answer or None
