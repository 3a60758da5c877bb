"""The worked examples of docs/pages/object-storage.md run as written: each bash block marked
`<!-- example: object storage, NAME -->`, in the page's order of steps, against moto's S3
server and Azurite on loopback. Only the documented endpoints are replaced (by the servers'),
and the blocks run in an empty temporary folder, in an environment without AWS, Azure or
lakemirror settings of its own: a block that does not work as written fails here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

PAGE = REPO / "docs/pages/object-storage.md"
EXAMPLE = re.compile(r"<!-- example: object storage, ([a-z0-9 ]+) -->\n```bash\n(.*?)```",
                     re.DOTALL)
BIN = Path(sys.executable).parent
# The endpoint each example documents, replaced by the test server's.
ENDPOINTS = {"s3": "http://localhost:9000", "azurite": "http://127.0.0.1:10000"}
# Per store: the blocks of the walk-through, in order, then its variants (the same store
# through other settings), each run by itself in the project the walk-through made.
STEPS = {"s3": (("s3 settings", "s3 bucket", "publish", "run"), ("s3 storage options",)),
         "azurite": (("azurite settings", "azurite container", "publish", "run"),
                     ("azure endpoint variables", "azure endpoint"))}
OWN_SETTINGS = ("AWS_", "AZURE_", "AZURITE_", "LAKEMIRROR_", "DBT_")
# `lakemirror status`: the table, its folder, replicating, file 1 staged and applied, 2 rows.
STATUS_LINE = re.compile(r"^dbo\.customers\s+Customers\s+replicating\s+1\s+1\s+2\s", re.MULTILINE)
ROWS = "[{'id': 1, 'name': 'Ada'}, {'id': 2, 'name': 'Grace'}]"  # read back by read_table


def page_examples() -> dict[str, str]:
    """The page's marked blocks by name (a name given twice fails)."""
    found = EXAMPLE.findall(PAGE.read_text())
    examples = dict(found)
    assert len(examples) == len(found), [name for name, _ in found]
    return examples


def run_blocks(blocks: list[str], endpoint: str, server_endpoint: str, folder: Path,
               home: Path) -> subprocess.CompletedProcess[str]:
    """The blocks as one bash script (stopping at the first failure) in `folder`, `endpoint`
    replaced by `server_endpoint`, `python` and `lakemirror` the test's own."""
    script = "\n".join(blocks)
    assert endpoint in script, f"the examples no longer use the endpoint {endpoint}"
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(OWN_SETTINGS)}
    environment.update(PATH=f"{BIN}{os.pathsep}{environment['PATH']}",
                       LAKEMIRROR_HOME=str(home))
    return subprocess.run(["bash", "-euo", "pipefail", "-c",
                           script.replace(endpoint, server_endpoint)],
                          cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=900)


def test_every_marked_example_is_run():
    assert set(page_examples()) == {name for steps in STEPS.values() for blocks in steps
                                    for name in blocks}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["s3", "azurite"])
def test_the_worked_example_mirrors_into_the_store(kind, request, tmp_path):
    server = request.getfixturevalue(f"{kind}_server")
    examples = page_examples()
    walk_through, variants = STEPS[kind]
    ran = run_blocks([examples[name] for name in walk_through], ENDPOINTS[kind],
                     server.endpoint, tmp_path, tmp_path / "home")
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    assert STATUS_LINE.search(ran.stdout), output
    assert ran.stdout.rstrip().endswith(ROWS), output
    for name in variants:
        again = run_blocks([examples[name]], ENDPOINTS[kind], server.endpoint,
                           tmp_path / "my_project", tmp_path / "home")
        assert again.returncode == 0, (name, again.stdout + again.stderr)
        assert STATUS_LINE.search(again.stdout), (name, again.stdout + again.stderr)
