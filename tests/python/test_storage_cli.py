"""`--landing-zone` / LAKEMIRROR_LANDING_ZONE take a URL as well as a folder: a malformed URL or
storage option is a usage error naming the option and the fix, a folder keeps its checks, and
no credential (a storage option, a SAS token in the URL) ever reaches the output, the logs,
the project or the warehouse."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.landing import sequence_file_name
from lakemirror.reference import ROW_MARKER
from lakemirror.environment import STORAGE_OPTIONS as OPTIONS_VARIABLE
from lakemirror.environment import STORAGE_OPTIONS_FILE as OPTIONS_FILE_VARIABLE

from conftest import copy_project

SENTINEL = "SENTINEL-7f3c9a-secret"


def lakemirror(tmp_path, *args, env=None):
    """`lakemirror ARGS` with its own home, the project and warehouse under tmp_path."""
    return CliRunner().invoke(cli, [*args, "--warehouse", str(tmp_path / "warehouse"),
                                    "--project-dir", str(tmp_path / "project")],
                              env={"LAKEMIRROR_HOME": str(tmp_path / "home"),
                                   OPTIONS_FILE_VARIABLE: None, **(env or {})})


@pytest.fixture
def project(tmp_path):
    return copy_project(tmp_path / "project")


@pytest.mark.parametrize("zone, message", [
    ("s3://lakemirror/zone/../other", "path segment '..'"),
    ("ftp://lakemirror/zone", "unknown storage URL scheme 'ftp'"),
    ("https://onelake.dfs.fabric.microsoft.com/Sales/Orders/Files/LandingZone",
     "item 'Orders' lacks its type"),
])
def test_a_malformed_url_is_a_usage_error_naming_the_option(tmp_path, project, zone, message):
    for args, env in ((["--landing-zone", zone], {}), ([], {"LAKEMIRROR_LANDING_ZONE": zone})):
        result = lakemirror(tmp_path, "run", *args, env=env)
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--landing-zone'" in result.output
        assert message in result.output and "Fix:" in result.output
    assert not (tmp_path / "warehouse").exists()


def test_an_unknown_storage_option_is_a_usage_error_naming_it(tmp_path, project):
    result = lakemirror(tmp_path, "ingest", "--landing-zone", "s3://lakemirror/zone",
                        env={OPTIONS_VARIABLE: json.dumps({"secret_acces_key": SENTINEL})})
    assert result.exit_code == 2
    assert "'secret_acces_key' is not valid for store 'S3'" in result.output
    assert SENTINEL not in result.output


def test_a_folder_keeps_its_checks(tmp_path, project):
    (tmp_path / "afile").write_text("")
    result = lakemirror(tmp_path, "run", "--landing-zone", str(tmp_path / "afile"))
    assert result.exit_code == 2 and "is a file" in result.output


def files_holding(root, secret):
    return [path for path in root.rglob("*") if path.is_file() and secret.encode() in
            path.read_bytes()]


def test_no_credential_reaches_output_logs_project_or_warehouse(tmp_path, project, s3_server):
    """A run over a zone in moto's S3 with the secret key in LAKEMIRROR_STORAGE_OPTIONS, then
    `status --json`; and zone URLs carrying a SAS token or a presigned signature."""
    prefix = s3_server.fresh_prefix()
    store = s3_server.store(prefix)
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), ROW_MARKER: pa.array([0, 0], pa.int32())})
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink)
    store.put("Orders/_metadata.json", b'{"keyColumns": ["id"]}')
    store.put(f"Orders/{sequence_file_name(1)}", sink.getvalue().to_pybytes())
    options = {**s3_server.options, "secret_access_key": SENTINEL}
    env = {OPTIONS_VARIABLE: json.dumps(options)}
    results = [lakemirror(tmp_path, "run", "--json", "--landing-zone", s3_server.url(prefix),
                          env=env)]
    assert results[0].exit_code == 0 and '"replicating"' in results[0].output, results[0].output
    results.append(CliRunner().invoke(cli, ["status", "--json", "--warehouse",
                                            str(tmp_path / "warehouse")]))
    for zone in (f"https://acct.blob.core.windows.net/landing/zone?sv=2022-11-02&sig={SENTINEL}",
                 f"s3://lakemirror/{prefix}?X-Amz-Signature={SENTINEL}",
                 f"s3://AKIA:{SENTINEL}@lakemirror/{prefix}"):
        results.append(lakemirror(tmp_path, "ingest", "--json", "--landing-zone", zone, env=env))
    for result in results:
        assert SENTINEL not in result.output + result.stderr
        assert result.exit_code in (0, 1, 2) and "Traceback" not in result.output
    assert files_holding(tmp_path, SENTINEL) == []


def test_status_output_and_records_redact_a_credential_in_an_error():
    """A table's error quoting a credential (say, a storage error echoing a SAS token) is
    redacted in the run's status, in the monitoring record kept in the warehouse, and in
    `lakemirror status` text and JSON."""
    from types import SimpleNamespace

    from lakemirror import monitor, status
    from lakemirror.storage.secrets import remember

    remember(SENTINEL)
    failed = status.TableStatus("dbo", "t", "failed", 3, None, f"GET ?sas={SENTINEL} failed")
    ingested = SimpleNamespace(last_sequence=3, files_pending=0, staged_rows=0, staged_bytes=0,
                               landed=())
    record = monitor.monitor_record(ingested, failed, None, 0, applied_now=False)
    report = monitor.WarehouseReport([record], None, None, 3600.0, datetime.now(timezone.utc))
    outputs = [status.to_json([failed]), status.to_text([failed]), record.error,
               monitor.to_json(report), monitor.to_text(report)]
    assert all("***" in output and SENTINEL not in output for output in outputs), outputs
