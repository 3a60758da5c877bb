"""`python -m lakemirror.bench.figures_page` (`make figures`): writes docs/pages/performance.md's
figures, between its `<!-- figures: NAME -->` and `<!-- /figures -->` markers, and
docs/pages/bench.png, from the bench's committed JSON in docs/figures/ (the page's one source
of figures; `--check` fails when the page differs from what the JSON gives)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import click

from lakemirror.bench.figures_source import FigureSet, load_sets
from lakemirror.bench.figures_tables import (
    downstream_block, fixed_cost_block, merge_growth_block, resources_block, scale_block,
    sweep_block, verify_cost_block)

BLOCK = re.compile(r"(<!-- figures: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figures -->)",
                   re.DOTALL)
BLOCKS: dict[str, Callable[[Mapping[str, FigureSet]], str]] = {
    "fixed-cost": fixed_cost_block, "scale": scale_block, "merge-growth": merge_growth_block,
    "verify-cost": verify_cost_block, "downstream": downstream_block,
    "resources": resources_block, "sweep": sweep_block}
PAGE = "pages/performance.md"
PLOT = "pages/bench.png"


def rendered_blocks(page: str, sets: Mapping[str, FigureSet]) -> dict[str, str]:
    """Each block the page holds, as the JSON renders it."""
    names = [match["name"] for match in BLOCK.finditer(page)]
    unknown = [name for name in names if name not in BLOCKS]
    if unknown:
        raise click.UsageError(f"performance.md: unknown figures block(s) {', '.join(unknown)}; "
                               f"known: {', '.join(BLOCKS)}")
    try:
        return {name: BLOCKS[name](sets) + "\n" for name in names}
    except KeyError as error:
        raise click.UsageError(f"performance.md: a figures block needs the set {error}, which "
                               "docs/figures/figures.yml does not list") from error


def page_blocks(page: str) -> dict[str, str]:
    """Each block as the page holds it."""
    return {match["name"]: match["body"] for match in BLOCK.finditer(page)}


def rendered_page(page: str, sets: Mapping[str, FigureSet]) -> str:
    blocks = rendered_blocks(page, sets)
    return BLOCK.sub(lambda match: match[1] + blocks[match["name"]] + match[4], page)


def draw_plot(sets: Mapping[str, FigureSet], plot_file: Path) -> None:
    """The bench's plot, drawn from the sweep's committed points."""
    from lakemirror.bench.plot import draw_sweep

    draw_sweep(sets["sweep"].documents[0]["plot"], plot_file)


@click.command()
@click.option("--docs", type=click.Path(path_type=Path, file_okay=False, exists=True),
              default=Path("docs"), show_default=True, help="the documentation folder")
@click.option("--check", is_flag=True,
              help="only say whether the page's figures are those the JSON gives")
def main(docs: Path, check: bool) -> None:
    sets = load_sets(docs / "figures")
    page_file = docs / PAGE
    page = page_file.read_text()
    page_now = rendered_page(page, sets)
    if check:
        if page_now != page:
            sys.exit(f"{page_file}: its figures differ from docs/figures/ (run make figures)")
        return
    page_file.write_text(page_now)
    if "sweep" in sets:
        draw_plot(sets, docs / PLOT)


if __name__ == "__main__":
    main()
