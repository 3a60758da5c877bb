"""A memory limit on a command and every process it starts, enforced by the bench's launcher
(bench/rusage.py): `lakemirror bench --memory-limit GB`.

The mechanism is `MECHANISM`: every `POLL_SECONDS` the launcher sums the resident memory
(VmRSS) of all its descendants, and when the sum exceeds the limit it kills them all (SIGKILL)
and reports the command out of memory. Finding the descendants reads every process's /proc
stat (about 3 ms with 100 processes here), so it is done every `TREE_POLLS` polls only: a
process started since is counted from the next search. The launcher is their subreaper, so a descendant that
leaves its parent or its session (a daemonized server) stays in the tree and is stopped too.
Chosen because it works for any user on any Linux: a cgroup v2 `memory.max` needs the memory
controller delegated to a writable child cgroup (not so on cgroup v1 hosts, nor for most users),
and RLIMIT_AS stops the JVM and Rust at start-up, whose virtual reservations are huge. Shared
pages are counted once per process, so the sum errs high; memory allocated within one poll may
exceed the limit before the kill.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import time
from dataclasses import dataclass
from resource import struct_rusage

import psutil

MECHANISM = "rss-poll"
POLL_SECONDS = 0.05
TREE_POLLS = 10  # the descendants are searched for every 10th poll (0.5 s)
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


@dataclass(frozen=True)
class Limited:
    """How a command run under the limit ended: its wait status and rusage (wait4), whether
    it was stopped, and the largest sum of its tree's resident memory seen, in bytes."""

    status: int
    usage: struct_rusage
    out_of_memory: bool
    peak_tree_bytes: int


def become_subreaper() -> None:
    """Orphaned descendants are reparented to this process, not init, so they stay in its tree."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def run_limited(process: subprocess.Popen[bytes], limit_bytes: int | None) -> Limited:
    """Wait for `process` (started after `become_subreaper`), following the resident memory of
    this process's descendants, and stopping its whole tree when it exceeds `limit_bytes`
    (None: never)."""
    launcher, peak, tree, poll = psutil.Process(), 0, [], 0
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            return Limited(status, usage, False, peak)
        if poll % TREE_POLLS == 0:
            tree = launcher.children(recursive=True)
        poll += 1
        peak = max(peak, _tree_rss(tree))
        if limit_bytes is not None and peak > limit_bytes:
            _kill(launcher.children(recursive=True))
            _, status, usage = os.wait4(process.pid, 0)
            _stop_the_rest(launcher)
            return Limited(status, usage, True, peak)
        time.sleep(POLL_SECONDS)


def _tree_rss(processes: list[psutil.Process]) -> int:
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:  # ended since listed
            continue
    return total


def _kill(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            continue


def _stop_the_rest(launcher: psutil.Process) -> None:
    """Kill and reap descendants until none is left (one may have forked before the kill)."""
    while remaining := launcher.children(recursive=True):
        _kill(remaining)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                return
        time.sleep(0.01)
