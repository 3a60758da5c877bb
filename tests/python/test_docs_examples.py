"""What the pages tell a user in their own project holds there: the shell examples of
getting-started.md, dbt-project.md and running.md run literally, every command exiting 0, in a
project made by `lakemirror init` from the wheel (installed in a fresh virtualenv, as a user
has it); the menu names each page by its title; running.md quotes `inspect`'s words."""

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from lakemirror.delta.log import UNSET_ISOLATION_LEVEL
from lakemirror.reference import ROW_MARKER as M

from conftest import REPO, as_multiset, mirrored_rows
from test_packaging import build_wheel, free_port, fresh_venv, publish

PAGES = REPO / "docs/pages"
# Put right before a ```bash block a user runs: `in a new folder` (an empty one), `in
# my_project` (a project `lakemirror init my_project` just made), or `, continued` (the same
# shell as the page's block before it). Each page's examples run in order, as one user follows
# the page, with a landing zone of one table, Customers, at /data/LandingZone.
SHELL_EXAMPLE = re.compile(r"<!-- example: shell(?: in (?P<start>a new folder|my_project)"
                           r"|(?P<continued>, continued)) -->\n```bash\n(?P<code>.*?)```",
                           re.DOTALL)
# The pages' placeholders /data/LandingZone and /data/warehouse: the test's data folder.
DATA_PLACEHOLDER = "/data/"
CUSTOMERS = [{"id": 1, "name": "a", M: 0}, {"id": 2, "name": "b", M: 0}]


@dataclass(frozen=True)
class Session:
    """The shell examples of a page that one shell runs, from where the first one starts."""

    page: str
    start: str
    blocks: tuple[str, ...]


def shell_sessions() -> list[Session]:
    sessions: list[Session] = []
    for page in sorted(PAGES.glob("*.md")):
        for example in SHELL_EXAMPLE.finditer(page.read_text()):
            if example["continued"]:
                before = sessions[-1]
                assert before.page == page.name, f"{page.name}: nothing before to continue"
                sessions[-1] = Session(before.page, before.start,
                                       (*before.blocks, example["code"]))
            else:
                sessions.append(Session(page.name, example["start"], (example["code"],)))
    return sessions


def checked_script(blocks: tuple[str, ...], data: Path) -> str:
    """The blocks as one bash script, placeholders mapped into `data`, that stops at the first
    command line whose status is not 0 and names it (`set -e` would let a failure inside
    `a && b` pass)."""
    lines = []
    for block in blocks:
        for line in block.replace(DATA_PLACEHOLDER, f"{data}/").replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                failed = shlex.quote(f"example failed: {line}")
                lines += [line, f"status=$?; if [ $status -ne 0 ]; then echo {failed} >&2; "
                                "exit $status; fi"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def wheel_bin(tmp_path_factory):
    """The bin folder of a fresh virtualenv with the wheel installed, and the `dbt` script pip
    would have put there with dbt (whose modules come from the test's environment)."""
    root = tmp_path_factory.mktemp("wheel")
    bin_dir = fresh_venv(root, build_wheel(root)) / "bin"
    (bin_dir / "dbt").write_text(f"#!{bin_dir / 'python'}\nfrom dbt.cli.main import cli\ncli()\n")
    (bin_dir / "dbt").chmod(0o755)
    return bin_dir


def users_shell(bin_dir: Path, home: Path) -> dict[str, str]:
    """A user's environment: the wheel's commands first, no setting of lakemirror's or dbt's
    but a lakemirror home and engine port of the test's own."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("LAKEMIRROR_")
           and name not in ("DBT_PROFILES_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "LAKEMIRROR_HOME": str(home),
            "LAKEMIRROR_ENGINE_PORT": str(free_port())}


def test_the_pages_a_user_follows_mark_their_shell_examples(tmp_path):
    sessions = shell_sessions()
    assert {session.page for session in sessions} >= {
        "getting-started.md", "dbt-project.md", "running.md"}
    [first] = [session for session in sessions if session.page == "getting-started.md"]
    assert first.start == "a new folder" and len(first.blocks) == 2
    script = checked_script(first.blocks, tmp_path)
    assert f"LAKEMIRROR_LANDING_ZONE={tmp_path}/LandingZone" in script
    assert "/data/" not in script


@pytest.mark.parametrize("example", ["false && true", "cd no-such-folder", "true | false"])
def test_a_failing_command_stops_its_example_and_is_named(tmp_path, example):
    script = checked_script(("echo first\n", f"{example}   # a comment\necho reached\n"),
                            tmp_path)
    ran = subprocess.run(["bash", "-c", f"set -o pipefail\n{script}"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0
    assert ran.stdout == "first\n"
    assert f"example failed: {example}   # a comment" in ran.stderr


@pytest.mark.slow
@pytest.mark.parametrize("session", shell_sessions(),
                         ids=lambda session: f"{session.page}:{session.start}")
def test_every_shell_example_runs_in_a_users_project_from_the_wheel(tmp_path, wheel_bin,
                                                                     session):
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    env = users_shell(wheel_bin, tmp_path / "home")
    publish(data / "LandingZone", 1, CUSTOMERS)
    project = work / "my_project"
    if session.start == "my_project":
        made = subprocess.run(["lakemirror", "init", "my_project"], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stdout + made.stderr
    try:
        ran = subprocess.run(["bash", "-c", "set -o pipefail\n"
                              + checked_script(session.blocks, data)],
                             cwd=project if session.start == "my_project" else work, env=env,
                             capture_output=True, text=True, timeout=900)
    finally:
        subprocess.run(["lakemirror", "engine", "stop"], cwd=project if project.is_dir() else work,
                       env=env, capture_output=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert mirrored_rows(data / "warehouse", "dbo", "customers") == as_multiset(
        [{key: value for key, value in row.items() if key != M} for row in CUSTOMERS])
    # what a user's project should not hear: the repository's own settings, dbt's warning
    # about configuration its fresh project does not use yet
    assert "DBT_PROFILES_DIR" not in ran.stdout + ran.stderr
    assert "unused configuration paths" not in ran.stdout.lower(), ran.stdout


def commands(blocks: tuple[str, ...]) -> list[str]:
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()
            if line.strip()]


def test_the_readmes_own_project_is_getting_starteds_tested_example():
    """The README's five minutes, from `lakemirror init` to the table in pandas, are the
    commands of getting-started.md's examples, which the test above runs."""
    readme = (REPO / "README.md").read_text()
    [block] = re.findall(r"## Your own project in five minutes\n\n```bash\n(.*?)```", readme,
                         re.DOTALL)
    [session] = [session for session in shell_sessions()
                 if session.page == "getting-started.md"]
    assert commands((block,)) == commands(session.blocks)
    assert "read_table" in block and "to_pandas()" in block


def test_running_md_quotes_what_inspect_prints_for_an_unset_isolation_level():
    page = " ".join((PAGES / "running.md").read_text().split())
    assert f"`{UNSET_ISOLATION_LEVEL}`" in page


def test_the_menu_names_each_page_by_its_title():
    menu = yaml.safe_load((REPO / "docs/mkdocs.yml").read_text())["nav"]
    for entry in menu:
        [(label, page)] = entry.items()
        title = (PAGES / page).read_text().splitlines()[0]
        assert page == "index.md" or title == f"# {label}", (page, title)
