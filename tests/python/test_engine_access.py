"""Only the embedded engine's owner gets in (issue 39). A hostile local user (`nobody`, in a
child process that drops root's rights) gets no answer from the background engine nor from a
run's engine: not without the token, not with a wrong one; it cannot read the token file, and
cannot reach Sail's own port. The owner's `lakemirror run`, plain `dbt build` and pyspark
session work as before, the token read from lakemirror's home."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pyarrow as pa
import pytest

from lakemirror.engine import ChildEngine, start_background, stop_background
from lakemirror.engine.access import TOKEN_VARIABLE, load_token, token_file
from lakemirror.engine.private_net import check_isolation
from lakemirror.engine.sail import background_process
from lakemirror.environment import ENGINE_ISOLATION, read_settings
from lakemirror.errors import ConfigError, EngineError
from lakemirror.reference import ROW_MARKER

from conftest import as_multiset, copy_project, mirrored_rows
from spark_cluster import free_port

BIN = Path(sys.executable).parent
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])
REFUSAL = "this embedded lakemirror engine accepts only its owner's requests"

# Run as root: imports what it needs (the interpreter's own library is under /root, closed to
# nobody), tries the engine once (which loads the rest), then becomes nobody and reports what
# it got: the query without a token and with a wrong one, the token file, Sail's own port.
HOSTILE = r"""
import encodings.idna, json, os, pwd, socket, sys
import grpc
from pyspark.sql.connect.session import SparkSession

facts = json.loads(sys.argv[1])
port = facts["port"]

def query(url, token):
    os.environ.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
    if token:
        os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = token
    try:
        spark = SparkSession.builder.remote(url).create()
        return "answered: %s" % spark.sql("select 41 + 1").collect()
    except Exception as error:
        return "%s: %s" % (type(error).__name__, error)

query(f"sc://127.0.0.1:{port}", None)
nobody = pwd.getpwnam("nobody")
os.setgroups([])
os.setgid(nobody.pw_gid)
os.setuid(nobody.pw_uid)
report = {"uid": os.getuid(),
          "no token": query(f"sc://127.0.0.1:{port}", None),
          "wrong token": query(f"sc://localhost:{port}", "not-the-token")}
try:
    with open(facts["token_file"]) as file:
        report["token file"] = "read: " + file.read()
except OSError as error:
    report["token file"] = error.strerror
try:
    socket.create_connection(("127.0.0.1", facts["inner_port"]), timeout=2).close()
    report["inner port"] = "connected"
except OSError as error:
    report["inner port"] = error.strerror
print(json.dumps(report))
"""


def as_nobody(port: int, inner_port: int, home: Path) -> dict[str, object]:
    """What the user nobody gets from the engine at `port` (its own port `inner_port`)."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("the hostile-user tests need root (to become nobody); CI runs as root")
        pytest.skip("needs root to switch to the user nobody")
    facts = {"port": port, "inner_port": inner_port,
             "token_file": str(token_file(home, port))}
    result = subprocess.run([sys.executable, "-c", HOSTILE, json.dumps(facts)],
                            capture_output=True, text=True, timeout=180,
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    report: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


def check_refused(report: dict[str, object], engine_pid: int, port: int) -> None:
    """No query answered, the token file stayed closed, and nothing of the engine's but its
    front listens on the host's loopback."""
    assert report["uid"] == 65534
    for attempt in ("no token", "wrong token"):
        answer = str(report[attempt])
        assert "UNAUTHENTICATED" in answer and REFUSAL in answer, (attempt, answer)
        # the answer would be "answered: [Row((41 + 1)=42)]"; the refusal names the port, which
        # may hold the digits 42
        assert "answered" not in answer and "Row(" not in answer
    assert report["token file"] == "Permission denied"
    assert report["inner port"] == "Connection refused"
    listening = {connection.laddr.port
                 for connection in psutil.Process(engine_pid).net_connections("inet")
                 if connection.status == psutil.CONN_LISTEN}
    assert listening == {port}


@pytest.fixture
def public_home() -> Iterator[Path]:
    """A lakemirror home other users may enter (pytest's folders are private): the token
    file's own rights are what keep them out."""
    root = Path(tempfile.mkdtemp(prefix="lakemirror-home-"))
    root.chmod(0o755)
    try:
        yield root / "home"
    finally:
        shutil.rmtree(root)


def test_the_background_engine_answers_no_other_user(public_home):
    port = free_port()
    start_background(port, home=public_home)
    try:
        running = background_process(public_home)
        assert running is not None and running.access is not None
        assert running.access.private, running.access.reason  # this host allows it
        report = as_nobody(port, running.access.inner_port, public_home)
        check_refused(report, running.process.pid, port)
    finally:
        assert stop_background(public_home)
    assert load_token(public_home, port) is None


def test_a_runs_engine_answers_no_other_user(public_home):
    """The engine a `lakemirror run` starts (run/dbt.py's ChildEngine)."""
    engine = ChildEngine(home=public_home)
    try:
        assert load_token(public_home, engine.address.port) == engine.token
        report = as_nobody(engine.address.port, engine.access.inner_port, public_home)
        check_refused(report, engine.pid, engine.address.port)
    finally:
        engine.kill()
    assert load_token(public_home, engine.address.port) is None


def test_without_isolation_the_token_still_guards_the_engine(public_home, monkeypatch):
    """LAKEMIRROR_ENGINE_ISOLATION=off (the fallback where namespaces are unavailable): Sail's
    own port is on the host's loopback, but the engine's port lets in only the token."""
    monkeypatch.setenv(ENGINE_ISOLATION, "off")
    engine = ChildEngine(home=public_home)
    try:
        assert not engine.access.private
        assert engine.access.reason == f"{ENGINE_ISOLATION}=off"
        report = as_nobody(engine.address.port, engine.access.inner_port, public_home)
        for attempt in ("no token", "wrong token"):
            assert REFUSAL in str(report[attempt]) and "answered" not in str(report[attempt])
        assert report["token file"] == "Permission denied"
        assert report["inner port"] == "connected"  # what `required` exists to refuse
    finally:
        engine.kill()


def test_required_isolation_refuses_to_start_without_a_private_network():
    problem = "user namespaces are unavailable here (refused: disabled)"
    with pytest.raises(EngineError) as refused:
        check_isolation("required", problem)
    assert problem in str(refused.value) and f"{ENGINE_ISOLATION}=auto" in str(refused.value)
    warning = check_isolation("auto", problem)
    assert warning is not None and problem in warning and "other local users" in warning
    assert check_isolation("off", problem) is None
    assert check_isolation("required", None) is None


def test_a_bad_isolation_setting_names_the_variable_and_its_values():
    with pytest.raises(ConfigError) as bad:
        read_settings({ENGINE_ISOLATION: "sometimes"})
    assert ENGINE_ISOLATION in str(bad.value) and "auto" in str(bad.value.hint)
    assert read_settings({ENGINE_ISOLATION: " Required "}).engine_isolation == "required"
    assert read_settings({}).engine_isolation == "auto"


def test_the_token_file_is_the_owners_alone(public_home):
    engine = ChildEngine(home=public_home)
    try:
        path = token_file(public_home, engine.address.port)
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.parent.stat().st_mode & 0o777 == 0o700
        assert path.read_text() == engine.token
    finally:
        engine.kill()


def test_the_owners_run_plain_dbt_and_pyspark_work_with_the_token(tmp_path, zone):
    """The background engine: `lakemirror run`, plain `dbt build` and a pyspark session with
    SPARK_CONNECT_AUTHENTICATE_TOKEN, each in a process of its own, as a user would."""
    project = copy_project(tmp_path / "project")
    warehouse, home, port = tmp_path / "wh", tmp_path / "home", free_port()
    env = {**os.environ, "LAKEMIRROR_HOME": str(home), "LAKEMIRROR_ENGINE_PORT": str(port),
           "LAKEMIRROR_WAREHOUSE": str(warehouse), "LAKEMIRROR_LANDING_ZONE": str(zone.root),
           "LAKEMIRROR_PROJECT_DIR": str(project), "DBT_PROFILES_DIR": str(project / "profiles")}
    env.pop(TOKEN_VARIABLE, None)

    def sh(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, env={**env, **extra}, cwd=project, capture_output=True,
                              text=True, timeout=300)

    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}], SCHEMA)
    started = sh(str(BIN / "lakemirror"), "engine", "start")
    try:
        assert started.returncode == 0, started.stderr
        assert f"token: {token_file(home, port)}" in started.stdout
        assert f'{TOKEN_VARIABLE}=$(cat {token_file(home, port)})' in started.stdout
        run = sh(str(BIN / "lakemirror"), "run")
        assert run.returncode == 0, run.stdout + run.stderr
        build = sh(str(BIN / "dbt"), "build")
        assert build.returncode == 0, build.stdout
        assert load_token(home, port) not in build.stdout + run.stdout
        query = ("from pyspark.sql import SparkSession; import sys; spark = SparkSession.builder"
                 f".remote('sc://localhost:{port}').getOrCreate(); "
                 f"print(spark.read.format('delta').load('{warehouse}/dbo/t').count())")
        owner = sh(sys.executable, "-c", query, **{TOKEN_VARIABLE: load_token(home, port)})
        assert owner.returncode == 0 and owner.stdout.strip() == "1", owner.stderr[-2000:]
        stranger = sh(sys.executable, "-c", query)
        assert stranger.returncode != 0 and REFUSAL in stranger.stderr
    finally:
        sh(str(BIN / "lakemirror"), "engine", "stop")
    assert mirrored_rows(warehouse, "dbo", "t") == as_multiset([{"id": 1, "v": "a"}])


def test_the_owners_run_on_its_own_engine_works(service, zone):
    """No background engine (in this test's home): the run starts its engine, keeps its token
    in the home while it runs, and its dbt reads it there."""
    assert background_process(service.settings.env.home) is None
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}], SCHEMA)
    statuses = service.run()
    assert [status.status for status in statuses] == ["replicating"], statuses
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": 1, "v": "a"}])


def test_a_port_taken_on_ipv6_loopback_is_refused(public_home):
    """A client given `localhost` may try ::1 first: whoever listened there would be sent
    the token, so the engine does not start beside it."""
    try:
        squatter = socket.socket(socket.AF_INET6)
        squatter.bind(("::1", 0))
    except OSError:
        pytest.skip("this host has no IPv6 loopback")
    with squatter:
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(EngineError) as refused:
            ChildEngine(home=public_home, port=port)
    assert "Address already in use" in str(refused.value)
    assert load_token(public_home, port) is None


# Run as root: imports what the engine's process needs (the interpreter's own library is under
# /root, closed to nobody), becomes nobody (dumpable again, as a process nobody executed is:
# else /proc/self's files stay root's and no user namespace can be mapped), then runs the
# engine's process as that user would.
UNPRIVILEGED_ENGINE = r"""
import ctypes, encodings.idna, os, pwd, sys
import pysail.spark, lakemirror.engine.front, lakemirror.engine.private_net
from lakemirror.engine import server
nobody = pwd.getpwnam("nobody")
os.setgroups([])
os.setgid(nobody.pw_gid)
os.setuid(nobody.pw_uid)
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
sys.argv = ["server", "--port", "0", "--with-parent"]
server.main()
"""


def test_an_unprivileged_users_engine_is_private_and_keeps_its_files_owner(public_home):
    """A user other than root makes the private network in a user namespace of its own that
    maps its own ids: Sail's port is unreachable from the host, the owner's token gets in,
    and what the engine writes belongs to the user."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("this test needs root (to become nobody); CI runs as root")
        pytest.skip("needs root to switch to the user nobody")
    folder = public_home.parent / "tables"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    env = {**os.environ, TOKEN_VARIABLE: "", "LAKEMIRROR_ENGINE_TOKEN": "the-owners-token",
           "LAKEMIRROR_HOME": str(public_home), ENGINE_ISOLATION: "required",
           "PYTHONDONTWRITEBYTECODE": "1"}
    log = public_home.parent / "engine.log"  # a file: a full pipe would stop the engine
    with log.open("w") as output:
        engine = subprocess.Popen([sys.executable, "-c", UNPRIVILEGED_ENGINE], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=output,
                                  text=True)
    try:
        assert engine.stdout is not None
        line = engine.stdout.readline()
        assert line, log.read_text()[-3000:]
        ready = json.loads(line)
        assert ready["private"] and ready["reason"] == "", ready
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", ready["inner_port"]), timeout=2).close()
        query = ("from pyspark.sql import SparkSession; spark = SparkSession.builder.remote("
                 f"'sc://localhost:{ready['port']}').getOrCreate(); "
                 f"spark.range(3).write.format('delta').save('{folder}/t'); "
                 f"print(spark.read.format('delta').load('{folder}/t').count())")
        owner = subprocess.run([sys.executable, "-c", query], capture_output=True, text=True,
                               timeout=180, env={**os.environ, TOKEN_VARIABLE: "the-owners-token"})
        assert owner.returncode == 0 and owner.stdout.strip() == "3", owner.stderr[-2000:]
        written = list((folder / "t").rglob("*.parquet"))
        assert written and {path.stat().st_uid for path in written} == {65534}
        stranger = subprocess.run([sys.executable, "-c", query.replace("/t'", "/u'")],
                                  capture_output=True, text=True, timeout=180,
                                  env={k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE})
        assert stranger.returncode != 0 and REFUSAL in stranger.stderr
    finally:
        engine.kill()
        engine.wait()
