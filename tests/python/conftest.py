"""Fixtures: a copy of the dbt project per test, landing zones written under tmp_path."""

from __future__ import annotations

import os
import signal
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt_common.tests import enable_test_caching
from deltalake import DeltaTable

from lakemirror.bench.contenders import private_project
from lakemirror.contract import DELETE
from lakemirror.delta.rows import read_table
from lakemirror.engine.spark import make_delta_jars_absolute, spark_unavailable
from lakemirror.landing import sequence_file_name
from lakemirror.landing.readiness import SETTLE_SECONDS
from lakemirror.service import MirrorService, RunSettings
from lakemirror.storage.location import Location

REPO = Path(__file__).resolve().parents[2]
# Test files are written just before each run: without a settle window they are staged at
# once (tests of the window set it themselves; subprocesses inherit this).
os.environ.setdefault(SETTLE_SECONDS, "0")
PROJECT_ITEMS = ("dbt_project.yml", "macros", "profiles", "models/marts", "seeds")
make_delta_jars_absolute(os.environ)  # the CLI tests' subprocesses run in other folders
# Why the `spark` target (Apache Spark + Delta Lake) cannot run here, or None; `make test` points
# LAKEMIRROR_DELTA_JARS at ../shared/delta-4.0.0 where that folder exists.
SPARK_UNAVAILABLE = spark_unavailable()
# The suite's one JVM lives for the whole session, where the full JIT pays for its compiling
# (the spark-marked tests: 907 s with the profile's quick tier only, 652 s with it;
# docs/pages/engines.md). Subprocesses inherit it: the command-line spark tests took no longer.
os.environ.setdefault("LAKEMIRROR_SPARK_JAVA_OPTIONS", "-XX:+UseSerialGC")
# dbt's own test caching, which its adapter test fixtures turn on (the conformance suites'
# among them): this process parses each distinct jinja source (dbt's and the project's macros,
# a model's SQL) once, keyed by its whole text, so the full parse of each test's fresh project
# copy no longer parses again the ~1,400 macros every copy shares (a full parse of a small
# project: 2.4 s, 0.7 s with it). An edited file's text is another key: it is parsed as edited.
enable_test_caching()


def engine_param(target: str) -> Any:
    """A pytest param for a dbt target; `spark` is marked `spark` and skipped, with the reason
    printed, where Spark and Delta's jars are missing."""
    if target != "spark":
        return pytest.param(target, id=target)
    return pytest.param(target, id=target, marks=[
        pytest.mark.spark, pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                                              reason=f"spark target skipped: {SPARK_UNAVAILABLE}")])


# Parametrize `target` with these to run a test on both engines.
ENGINES = [engine_param("embedded"), engine_param("spark")]


def copy_project(destination: Path, delta_features: tuple[str, ...] = ()) -> Path:
    """A fresh copy of the lakemirror dbt project without generated mirror models; its mirror
    models take `delta_features`."""
    return private_project(destination, PROJECT_ITEMS, delta_features)


class Zone:
    """A landing zone under construction, written the way a publisher would."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def table(self, folder: str, key_columns: Sequence[str] | None) -> Path:
        path = self.root / folder
        path.mkdir(parents=True, exist_ok=True)
        if key_columns is not None:
            (path / "_metadata.json").write_text(
                '{"keyColumns": [%s]}' % ", ".join(f'"{key}"' for key in key_columns))
        return path

    def write(self, folder: str, sequence: int, rows: Sequence[dict[str, Any]],
              schema: pa.Schema, **options: Any) -> Path:
        path = self.root / folder / sequence_file_name(sequence)
        pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), path, **options)
        return path


def mirror_setup(root: Path, target: str = "embedded") -> tuple[Zone, MirrorService]:
    """A landing zone and a service mirroring it with a fresh project copy, under `root`."""
    zone = Zone(root / "LandingZone")
    zone.root.mkdir(parents=True, exist_ok=True)
    return zone, MirrorService(RunSettings.given(
        zone.root, root / "warehouse", copy_project(root / "project"), target=target,
        quiet=True))


@pytest.fixture
def zone(tmp_path: Path) -> Zone:
    return Zone(tmp_path / "LandingZone")


@pytest.fixture
def target() -> str:
    """The dbt target of `service`: parametrize it with ENGINES to run on both engines."""
    return "embedded"


@pytest.fixture
def service(tmp_path: Path, zone: Zone, target: str) -> MirrorService:
    zone.root.mkdir(parents=True, exist_ok=True)
    project = copy_project(tmp_path / "project")
    return MirrorService(RunSettings.given(zone.root, tmp_path / "warehouse", project,
                                           target=target, quiet=True))


def spark_session() -> Any:
    """This process's Spark session: the one the last `spark` dbt invocation ran on, else a new
    one with Delta Lake, marked as lakemirror's for no warehouse (so the next invocation ends
    it) and with its warehouse folder out of the way."""
    from pyspark.sql import SparkSession

    from lakemirror.engine.spark import SESSION_MARK

    session = SparkSession._instantiatedSession
    if session is not None and session.sparkContext._jsc is not None:
        return session
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)  # an embedded run's Connect mark
    return SparkSession.builder.config(map={
        "spark.driver.extraClassPath": f"{os.environ.get('LAKEMIRROR_DELTA_JARS', '')}/*",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": tempfile.mkdtemp(prefix="spark-warehouse-"),
        SESSION_MARK: "", "spark.ui.enabled": "false", "spark.log.level": "ERROR"}).getOrCreate()


def owner_session(address: Any = None) -> Any:
    """A new Spark Connect session on the embedded engine at `address` (by default the one
    lakemirror's runs use here), as its owner: with its token, from lakemirror's home."""
    from pyspark.sql.connect.session import SparkSession

    from lakemirror.engine.access import owner_token, owner_url
    from lakemirror.environment import read_settings
    from lakemirror.service import engine_address

    env = read_settings()
    address = address or engine_address(env)
    return SparkSession.builder.remote(
        owner_url(address.port, owner_token(env.home, address.port))).create()


def on_dbt_events(monkeypatch: pytest.MonkeyPatch, callback: Any) -> None:
    """Pass every event of the dbt invocations from now on to `callback` too."""
    from dbt.cli import main as dbt_main

    original = dbt_main.dbtRunner

    def runner(*args: object, callbacks: list | None = None, **kwargs: object) -> object:
        return original(*args, callbacks=[*(callbacks or []), callback], **kwargs)

    monkeypatch.setattr(dbt_main, "dbtRunner", runner)


def mirrored_rows(warehouse: Location, schema: str, table: str) -> Counter[tuple[Any, ...]]:
    """The mirrored table's data rows (without _lm_ columns) as a multiset of sorted items
    (read through delta-rs's SQL engine when the table has deletion vectors); the warehouse a
    folder or a place in object storage."""
    data = read_table(warehouse / schema / table)
    columns = [name for name in data.column_names if not name.startswith("_lm_")]
    return Counter(tuple(sorted(row.items())) for row in data.select(columns).to_pylist())


def deletion_vectors_added(path: Path, commits: int | None = None) -> int:
    """Deletion vectors the last `commits` (else all) commits of the Delta table at `path`
    added: MERGEs that marked rows removed instead of rewriting their files."""
    return sum(int(commit.get("operationMetrics", {}).get("numTargetDeletionVectorsAdded", 0))
               for commit in DeltaTable(str(path)).history(commits))


def track_presence(present: set[Any], key: Any, marker: int) -> None:
    """Keep `present` the keys a change stream has left in the table: every change but a
    delete leaves its key there."""
    if marker == DELETE:
        present.discard(key)
    else:
        present.add(key)


def as_multiset(rows: Sequence[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(sorted(row.items())) for row in rows)


@contextmanager
def fail_if_hung(seconds: int, what: str) -> Iterator[None]:
    """Raise TimeoutError in the block after `seconds`, instead of hanging the test suite."""
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(what)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def object_server(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A session's object-store server (tests/python/object_servers.py), with its environment
    set for the session; skipped, with the reason, where the server is not installed (and so
    failed under CI=true)."""
    import object_servers

    reason = object_servers.server_unavailable(kind)
    if reason is not None:
        pytest.skip(f"{kind} server skipped: {reason}")
    start = object_servers.azurite_server if kind == "azurite" else object_servers.s3_server
    with start(tmp_path_factory.mktemp(kind)) as server, \
            mock.patch.dict(os.environ, server.environment):
        yield server


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Azurite's blob service with container `lakemirror`, as an ObjectServer (az:// URLs)."""
    yield from object_server("azurite", tmp_path_factory)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """moto's S3 server with bucket `lakemirror`, as an ObjectServer (s3:// URLs)."""
    yield from object_server("s3", tmp_path_factory)


@pytest.fixture(params=["azurite", "s3"])
def object_store_server(request: pytest.FixtureRequest) -> Any:
    """Each object-store server in turn: parametrize a test over Azurite and moto's S3."""
    return request.getfixturevalue(f"{request.param}_server")
