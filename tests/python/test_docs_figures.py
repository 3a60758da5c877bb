"""One source for every figure: performance.md's figures are rendered from the bench's committed
JSON (docs/figures/) and no other number with a unit stands in that page; no other page nor
the README holds a figure; and no user doc speaks of the workshop lakemirror is built in
(commit hashes, this machine's paths, "the VM", history of earlier versions)."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from lakemirror.bench.figures_page import BLOCK, draw_plot, page_blocks, rendered_blocks
from lakemirror.bench.figures_source import load_sets

from conftest import REPO

DOCS = REPO / "docs"
PERFORMANCE = DOCS / "pages/performance.md"
USER_DOCS = sorted([REPO / "README.md", *(DOCS / "pages").glob("*.md")])

# A number with a unit of time, size, rate or ratio (or a count of requests): a measured figure,
# unless it is a setting listed in ALLOWED.
FIGURE = re.compile(
    r"(?<![\w.,/-])\d[\d,]*(?:\.\d+)?\s?(?:×|%|ms\b|s\b|seconds?\b|minutes?\b|min\b|hours?\b|"
    r"days?\b|MB\b|GB\b|GiB\b|MiB\b|KB\b|TB\b|M rows/s|rows/s|MB/s|objects/s|requests\b)")
# Settings and defaults written with a unit: (page, the phrase as the page writes it).
ALLOWED = {
    "performance.md": ("every 50 ms", "2 GB files for memory", "(7 days by default)",
                       "(40% update, 20% insert, 20% delete, 20%\nupsert; 10% of a file's"),
    "running.md": ("| 2 GiB |", "| 2 s |", "(default 7 days)"),
    "failure-model.md": ("(default 2 GiB)", "read up to 1 MiB"),
    "history.md": ("30 days by default",),
    "development.md": ("after 15 minutes (pytest-timeout)", "at most 20 requests a further file"),
    "landing-zone.md": ("default 2 s",),
    "object-storage.md": ("after 120 s (10 s to connect)", "retried 5 times within 120 s",
                          "(60 s)", "leases of 2 s", "(0.1 s doubling up to 15 s",
                          "retry 5 times within\n120 s", "(10 times within\n3 minutes)",
                          "(1 MiB at most;", "the same 1 MiB limit", "up to\n  4 MiB"),
    "spark-cluster.md": ("of at least 1 GB; the executors 1 GB", "backoff 0.5–8 s"),
    "table-settings.md": ("(24 hours by default)",),
    "deploy.md": ("every 15 minutes", "at least every 5 minutes"),
}
# Words about the workshop lakemirror is built in, not about a user's machine.
WORKSHOP = re.compile(
    r"\bcommit [0-9a-f]{7,40}\b|(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])"
    r"|\.\./shared|/work/|/tmp/pytest|\bthe VM\b|\bprevious version|\bearlier version"
    r"|\bthis version\b|not downloadable here|than when commit|\bthat day\b"
    r"|machines lakemirror is built on|\bbefore (?:the|this) (?:[\w-]+ ){0,3}change\b",
    re.IGNORECASE)


def without_code(text: str) -> str:
    """The text outside fenced code blocks and inline code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def figures_in(text: str, page: str) -> list[str]:
    """The figures a page's text holds outside code, its allowed settings aside."""
    for phrase in ALLOWED.get(page, ()):
        text = text.replace(phrase, "")
    return FIGURE.findall(without_code(text))


def workshop_words(text: str) -> list[str]:
    return [match[0] for match in WORKSHOP.finditer(text)]


def outside_blocks(page: str) -> str:
    return BLOCK.sub("", page)


# (a) performance.md's figures are what the committed JSON renders

def test_the_performance_page_holds_what_the_committed_json_renders():
    page = PERFORMANCE.read_text()
    sets = load_sets(DOCS / "figures")
    assert page_blocks(page), "performance.md has no generated figures"
    assert page_blocks(page) == rendered_blocks(page, sets), "run make figures"


def test_every_committed_document_is_in_the_index_and_the_index_gives_its_provenance():
    sets = load_sets(DOCS / "figures")
    listed = {file for figure_set in sets.values() for file in figure_set.files}
    assert listed == {path.name for path in (DOCS / "figures").glob("*.json")}
    for figure_set in sets.values():
        assert figure_set.command.split("lakemirror bench ")[1].endswith("--json")
        assert "--dir" not in figure_set.command and "/" not in figure_set.command
        assert figure_set.measured and figure_set.machine and figure_set.version == "0.1.0"


def check(docs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lakemirror.bench.figures_page", "--docs",
                           str(docs), "--check"], capture_output=True, text=True, timeout=120)


def test_the_check_passes_on_the_committed_docs():
    checked = check(DOCS)
    assert checked.returncode == 0, checked.stderr


def edit_a_json_number(docs):
    document = docs / "figures/verify-cost-1.json"
    data = json.loads(document.read_text())
    data["verify_cost"]["sizes"][0]["maintain_seconds"] += 1.0
    document.write_text(json.dumps(data))


def edit_a_page_figure(docs):
    page = docs / "pages/performance.md"
    body = page_blocks(page.read_text())["verify-cost"]
    page.write_text(page.read_text().replace(body, body.replace(" s", "0 s", 1)))


@pytest.mark.parametrize("drift", [edit_a_json_number, edit_a_page_figure])
def test_a_page_that_drifts_from_its_json_fails_the_check(tmp_path, drift):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    drift(docs)
    checked = check(docs)
    assert checked.returncode != 0
    assert "differ from docs/figures/" in checked.stderr


def test_make_figures_rewrites_only_the_generated_blocks(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    edit_a_json_number(docs)
    subprocess.run([sys.executable, "-m", "lakemirror.bench.figures_page", "--docs", str(docs)],
                   check=True, timeout=120)
    assert check(docs).returncode == 0
    assert outside_blocks((docs / "pages/performance.md").read_text()) == outside_blocks(
        PERFORMANCE.read_text())


# (b) no number with a unit in performance.md outside the generated blocks

def test_performance_md_holds_no_figure_outside_its_generated_blocks():
    assert figures_in(outside_blocks(PERFORMANCE.read_text()), "performance.md") == []


@pytest.mark.parametrize("line", ["A cold run took 9.5 s.", "verify is about 5× one scan.",
                                  "Staging held 2,526 MB above idle.", "30 to 40% faster."])
def test_a_figure_written_by_hand_in_performance_md_fails(line):
    page = outside_blocks(PERFORMANCE.read_text()) + f"\n{line}\n"
    assert figures_in(page, "performance.md") != []


def test_a_figure_in_a_code_block_or_a_generated_block_is_not_written_by_hand():
    assert figures_in("```bash\nsleep 5 s\n```\n`timeout 60s`\n", "performance.md") == []


# (c) no figure in any other page nor the README

@pytest.mark.parametrize("page", [path for path in USER_DOCS if path != PERFORMANCE],
                         ids=lambda path: path.name)
def test_no_other_page_holds_a_figure(page):
    assert figures_in(page.read_text(), page.name) == [], "link performance.md instead"


@pytest.mark.parametrize("line", ["`make demo` took 92 s on a fresh clone.",
                                  "`make test` about 35 minutes on 2 cores.",
                                  "15.1 s against 10.0 s (1.51×)", "a cold run makes 112 requests"])
def test_a_figure_planted_in_another_page_fails(line):
    page = DOCS / "pages/getting-started.md"
    assert figures_in(page.read_text() + f"\n{line}\n", page.name) != []


def test_each_allowed_setting_is_in_its_page_and_would_count_as_a_figure():
    for page, phrases in ALLOWED.items():
        text = (DOCS / "pages" / page).read_text()
        for phrase in phrases:
            assert phrase in text and FIGURE.search(phrase), (page, phrase)


# (d) no workshop words in the README or the docs

@pytest.mark.parametrize("page", USER_DOCS, ids=lambda path: path.name)
def test_no_page_speaks_of_the_workshop(page):
    assert workshop_words(page.read_text()) == []


@pytest.mark.parametrize("line", [
    "The VM ran slower that day than when commit 1643975 was measured.",
    "On commit a4c0851 a run reads each log once.", "| staging | 6.02 s | 28a7e1f |",
    "LAKEMIRROR_DELTA_JARS=../shared/delta-4.0.0 make test",
    "the test wrote /tmp/pytest-of-root/warehouse", "run from /work/main",
    "Measured on the previous version.", "Earlier versions sent 21 statements.",
    "Figures of this version", "the connectors are not downloadable here",
    "the machines lakemirror is built on", "against 212 before the retirement check change"])
def test_a_workshop_word_planted_in_a_page_fails(line):
    page = (DOCS / "pages/running.md").read_text() + f"\n{line}\n"
    assert workshop_words(page) != []


def test_the_plot_is_drawn_from_the_sweeps_committed_points(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the dev extra")
    sets = load_sets(DOCS / "figures")
    draw_plot(sets, tmp_path / "bench.png")
    assert (tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")
    points = sets["sweep"].documents[0]["plot"]
    assert set(points) == {"table rows", "changes per file"}
    assert all(len(values) == 3 for axis in points.values() for values in axis.values())
