"""The spark target without Delta's jars (LAKEMIRROR_DELTA_JARS unset, or a folder without
them, and no Maven) stops before its JVM starts, naming the setting to fix, for `lakemirror run`
and for plain dbt, instead of Ivy's resolution log and a Java gateway traceback. No JVM runs
here: each refusal comes first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.engine.spark import check_spark_target
from lakemirror.errors import EngineError
from lakemirror.reference import ROW_MARKER

from conftest import Zone, copy_project

BIN = Path(sys.executable).parent
JAVA = {"JAVA_HOME": "/opt/java"}  # Java is there, as far as the check can tell


def never() -> bool:
    raise AssertionError("Maven Central was asked, though the setting says where the jars are")


@pytest.fixture
def jars(tmp_path):
    folder = tmp_path / "jars"
    folder.mkdir()
    return folder


def test_a_jar_folder_without_deltas_jars_is_refused_naming_the_setting(jars):
    with pytest.raises(EngineError) as refused:
        check_spark_target({**JAVA, "LAKEMIRROR_DELTA_JARS": str(jars)}, maven_answers=never)
    assert f"no delta-spark_*.jar in LAKEMIRROR_DELTA_JARS={jars}" in str(refused.value)
    assert "delta-storage-<version>.jar" in str(refused.value)
    (jars / "delta-spark_2.13-4.0.0.jar").touch()
    with pytest.raises(EngineError, match=r"no delta-storage-\*\.jar in LAKEMIRROR_DELTA_JARS"):
        check_spark_target({**JAVA, "LAKEMIRROR_DELTA_JARS": str(jars)}, maven_answers=never)
    (jars / "delta-storage-4.0.0.jar").touch()
    check_spark_target({**JAVA, "LAKEMIRROR_DELTA_JARS": str(jars)}, maven_answers=never)
    with pytest.raises(EngineError, match="is not a folder"):
        check_spark_target({**JAVA, "LAKEMIRROR_DELTA_JARS": str(jars / "nowhere")})


def test_without_a_jar_folder_maven_central_or_ivys_cache_must_have_them(tmp_path):
    ivy = tmp_path / "ivy-jars"
    ivy.mkdir()
    with pytest.raises(EngineError) as refused:
        check_spark_target(JAVA, ivy_jars=ivy, maven_answers=lambda: False)
    message = str(refused.value)
    assert "LAKEMIRROR_DELTA_JARS is not set, and Maven Central" in message
    assert "set LAKEMIRROR_DELTA_JARS to a folder holding delta-spark_2.13" in message
    check_spark_target(JAVA, ivy_jars=ivy, maven_answers=lambda: True)
    check_spark_target({**JAVA, "LAKEMIRROR_DELTA_PACKAGES": "io.delta:delta-spark_2.13:4.0.0"},
                       ivy_jars=ivy, maven_answers=never)  # the user's word that Maven answers
    (ivy / "io.delta_delta-spark_2.13-4.0.0.jar").touch()
    check_spark_target(JAVA, ivy_jars=ivy, maven_answers=never)


def spark_zone(tmp_path):
    zone = Zone(tmp_path / "zone")
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, ROW_MARKER: 0}],
               pa.schema([("id", pa.int64()), (ROW_MARKER, pa.int32())]))
    return zone


def test_lakemirror_run_refuses_before_any_work(tmp_path, jars):
    zone, project = spark_zone(tmp_path), copy_project(tmp_path / "project")
    result = CliRunner().invoke(cli, [
        "run", "--target", "spark", "--landing-zone", str(zone.root),
        "--warehouse", str(tmp_path / "wh"), "--project-dir", str(project)],
        env={**JAVA, "LAKEMIRROR_HOME": str(tmp_path / "home"),
             "LAKEMIRROR_DELTA_JARS": str(jars)})
    assert result.exit_code == 2, result.output
    assert f"the spark target cannot start: no delta-spark_*.jar in LAKEMIRROR_DELTA_JARS={jars}" \
        in result.output
    assert not (tmp_path / "wh" / "_lakemirror" / "staging").exists()  # nothing staged


def test_plain_dbt_refuses_before_the_jvm_starts(tmp_path, jars):
    project = copy_project(tmp_path / "project")
    (project / "models" / "one.sql").write_text("select 1 as id\n")
    run = subprocess.run(
        [str(BIN / "dbt"), "run", "--target", "spark", "--select", "one"], cwd=project,
        capture_output=True, text=True, timeout=300,
        env={**os.environ, **JAVA, "LAKEMIRROR_HOME": str(tmp_path / "home"),
             "LAKEMIRROR_DELTA_JARS": str(jars), "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
             "DBT_PROFILES_DIR": str(project / "profiles")})
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"no delta-spark_*.jar in LAKEMIRROR_DELTA_JARS={jars}" in run.stdout
    for noise in ("Ivy", "JAVA_GATEWAY", "Traceback"):
        assert noise not in run.stdout + run.stderr, run.stdout + run.stderr
