"""`make test`: the whole suite on two pytest processes, each running whole modules.

A serial run keeps about one of the machine's two cores busy: much of its time is spent
waiting for JVMs, dbt and the storage servers. So the modules are split into shards of about
equal time (`suite_seconds.json`: each module's seconds in a run of the suite, which writes
them to build/suite_seconds.json; a module not in it counts as the mean), the modules of a
`TOGETHER` group in the same shard, and each shard runs in a pytest process of its own, with
its own LAKEMIRROR_HOME (where a background engine's state lives) and cache folder. The first
shard's output is shown as it runs; the others' follows it. Then the modules in `ALONE` run by
themselves. The exit code is the worst of the processes'.

`python tests/run_suite.py [pytest arguments]`; LAKEMIRROR_TEST_PROCESSES sets the number of
processes (1: plain `pytest`, in this process's environment).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent
TEST_ROOTS = ("tests/python", "tests/dbt_adapter")
SECONDS = Path(__file__).with_name("suite_seconds.json")
# Every module's seconds in the last run, in SECONDS' format: copied over SECONDS, it balances
# the next runs' shards by measured figures (a module SECONDS lacks counts as the mean).
MEASURED = ROOT / "build" / "suite_seconds.json"
PROCESSES = "LAKEMIRROR_TEST_PROCESSES"
# Run alone, after the shards: with another test process loading the machine, the embedded
# engine (Sail 0.7.2) twice stopped answering while dbt's conformance suite opened its ~150th
# session (no error, no CPU); alone it never has in any run.
ALONE = ("tests/dbt_adapter/test_conformance.py",)
# Modules that share a process: the spark target's JVM (in the test process) starts and warms up
# once, and so does the test cluster (tests/spark_cluster.py). Two JVMs warming up at once on
# two cores took twice as long: the spark scenarios' setup 343 s instead of 134. The first group
# holds every module that runs the spark target in the test process, so the other shard starts
# no such JVM; test_verify_engines verifies test_spark_scenarios' mirrors, built once a process.
TOGETHER = (
    ("tests/python/test_apply_changes_settings.py", "tests/python/test_change_data_feed.py",
     "tests/python/test_clustering.py", "tests/python/test_docs_reading.py",
     "tests/python/test_maintenance.py", "tests/python/test_mirror_changes.py",
     "tests/python/test_on_schema_change.py", "tests/python/test_seeds.py",
     "tests/python/test_spark_concurrency.py", "tests/python/test_spark_delta.py",
     "tests/python/test_spark_scenarios.py", "tests/python/test_spark_target.py",
     "tests/python/test_verify_engines.py", "tests/dbt_adapter/test_conformance_spark.py"),
    ("tests/python/test_connect_target.py", "tests/dbt_adapter/test_conformance_connect.py"),
)
STOP_SECONDS = 60  # an interrupted process's time to tear its fixtures down
SLOWEST_SHOWN = 15  # modules listed with their seconds at the end (suite_seconds.json's source)


def modules() -> list[str]:
    """Every test module, as pytest finds them (test_*.py under the test roots), in order."""
    return [path.relative_to(ROOT).as_posix() for root in TEST_ROOTS
            for path in sorted((ROOT / root).glob("test_*.py"))]


def shards(names: list[str], seconds: dict[str, float], count: int,
           together: tuple[tuple[str, ...], ...] = TOGETHER) -> list[list[str]]:
    """`names` in `count` shards of about equal time (longest first, each to the shortest
    shard; the modules of a `together` group as one), each in the order of `names`."""
    mean = sum(seconds.values()) / len(seconds) if seconds else 1.0
    grouped = [[name for name in group if name in names] for group in together]
    units = [unit for unit in grouped if unit] + [
        [name] for name in names if not any(name in group for group in together)]
    loads = [0.0] * count
    assigned: list[list[str]] = [[] for _ in range(count)]
    for unit in sorted(units, key=lambda unit: -sum(seconds.get(name, mean) for name in unit)):
        shortest = loads.index(min(loads))
        loads[shortest] += sum(seconds.get(name, mean) for name in unit)
        assigned[shortest].extend(unit)
    return [sorted(shard, key=names.index) for shard in assigned if shard]


def run(arguments: list[str], count: int) -> int:
    """Run the shards at once, then the modules that run alone; returns the worst exit
    code."""
    everything = modules()
    parts = shards([name for name in everything if name not in ALONE],
                   json.loads(SECONDS.read_text()), count)
    alone = [name for name in everything if name in ALONE]
    with tempfile.TemporaryDirectory(prefix="lakemirror-suite-",
                                     ignore_cleanup_errors=True) as folder:
        return _run_in(Path(folder), arguments, parts, alone)


def _run_in(work: Path, arguments: list[str], parts: list[list[str]], alone: list[str]) -> int:
    """`run` with its processes' homes, caches and logs in `work`."""
    print(f"make test: {len(parts)} pytest processes, whole modules each, then "
          f"{', '.join(alone)} alone (tests/run_suite.py); the output of processes "
          f"2..{len(parts)} follows the first's", flush=True)
    started = time.monotonic()
    logs = [None, *(work / f"process-{index}.log" for index in range(2, len(parts) + 1))]
    codes = _wait([_start(work, index, arguments, part, log)
                   for index, (part, log) in enumerate(zip(parts, logs), start=1)])
    for index, log in enumerate(logs[1:], start=2):
        print(f"\n===== pytest process {index} of {len(parts)} =====", flush=True)
        sys.stdout.write(log.read_text(errors="replace"))
    if alone:
        print(f"\n===== {', '.join(alone)} alone =====", flush=True)
        codes += _wait([_start(work, len(parts) + 1, arguments, alone, None)])
    measured = module_seconds(sorted(work.glob("process-*.xml")))
    _print_slowest(measured)
    if measured:
        MEASURED.parent.mkdir(exist_ok=True)
        MEASURED.write_text(seconds_text(measured))
        print(f"make test: every module's seconds in {MEASURED.relative_to(ROOT)} (copied over "
              f"{SECONDS.relative_to(ROOT)}, they balance the next runs)", flush=True)
    print(f"\nmake test: exit codes {codes}, {time.monotonic() - started:.0f} s", flush=True)
    return max(codes, key=lambda code: code != 0)


def shard_environment(environ: Mapping[str, str], home: Path) -> dict[str, str]:
    """A shard's environment: its own LAKEMIRROR_HOME, and no LAKEMIRROR_ENGINE_PORT the user
    exported (the shards' engines would all bind it; unset, each takes a free port)."""
    return {**{name: value for name, value in environ.items()
               if name != "LAKEMIRROR_ENGINE_PORT"}, "LAKEMIRROR_HOME": str(home)}


def _start(work: Path, index: int, arguments: list[str], part: list[str],
           log: Path | None) -> subprocess.Popen[bytes]:
    """A pytest process running `part`, with its own LAKEMIRROR_HOME and cache, its output
    into `log` (None: this process's)."""
    home = work / f"home-{index}"
    home.mkdir()
    command = [sys.executable, "-m", "pytest", "-o", f"cache_dir={work}/cache-{index}",
               f"--junitxml={work}/process-{index}.xml", *arguments, *part]
    output = None if log is None else log.open("w")
    try:
        return subprocess.Popen(command, cwd=ROOT, env=shard_environment(os.environ, home),
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        if output is not None:
            output.close()


def module_seconds(reports: list[Path]) -> dict[str, float]:
    """Each module's seconds (its tests' setup, call and teardown) in the shards' JUnit
    reports; a report a stopped process never wrote counts for nothing."""
    seconds: Counter[str] = Counter()
    for report in reports:
        if not report.exists():
            continue
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            module = case.get("classname", "").split(".")
            path = "/".join(module[:next((index + 1 for index, part in enumerate(module)
                                           if part.startswith("test_")), len(module))])
            seconds[f"{path}.py"] += float(case.get("time") or 0)
    return dict(seconds)


def seconds_text(seconds: dict[str, float]) -> str:
    """`seconds` as SECONDS holds them: whole seconds, by module name."""
    return json.dumps({name: round(spent) for name, spent in sorted(seconds.items())},
                      indent=1) + "\n"


def _print_slowest(seconds: dict[str, float]) -> None:
    if seconds:
        print(f"\nmake test: slowest modules (seconds in their process; "
              f"tests/suite_seconds.json balances the shards by them):", flush=True)
        for name, spent in Counter(seconds).most_common(SLOWEST_SHOWN):
            print(f"  {spent:7.1f}  {name}", flush=True)


def _wait(processes: list[subprocess.Popen[bytes]]) -> list[int]:
    """The processes' exit codes. Interrupted, each is interrupted as Ctrl-C would (pytest
    then stops the servers and engines its fixtures started), and killed if it has not ended
    within STOP_SECONDS."""
    try:
        return [process.wait() for process in processes]
    finally:
        running = [process for process in processes if process.poll() is None]
        for process in running:
            os.killpg(process.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_SECONDS
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def main() -> int:
    count = int(os.environ.get(PROCESSES) or 2)
    if count <= 1:
        return subprocess.call([sys.executable, "-m", "pytest", *sys.argv[1:]], cwd=ROOT)
    return run(sys.argv[1:], count)


if __name__ == "__main__":
    sys.exit(main())
