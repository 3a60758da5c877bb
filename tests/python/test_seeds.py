"""A seed loaded again holds its CSV's rows once, on both engines: a reload replaces the Delta
table in place (on Spark, a drop before the replace would attach the old rows and double
them), and a changed CSV replaces rows and columns."""

from __future__ import annotations

import pytest

from conftest import ENGINES, mirror_setup, mirrored_rows



@pytest.mark.parametrize("target", ENGINES)
def test_a_seed_loaded_again_holds_its_rows_once(tmp_path, target):
    _, service = mirror_setup(tmp_path, target)
    seeds = service.settings.project_dir / "seeds"
    (seeds / "user_regions.yml").write_text(  # the project's own seeds are examples, off
        "seeds:\n  - name: user_regions\n    config: {enabled: true}\n")
    seed = seeds / "user_regions.csv"
    seed.write_text("country_code,region\nUS,Americas\nDE,Europe\nFR,Europe\n")
    expected = {(("country_code", "US"), ("region", "Americas")),
                (("country_code", "DE"), ("region", "Europe")),
                (("country_code", "FR"), ("region", "Europe"))}
    for _ in range(2):
        assert not [node.message for node in service.dbt(service.settings, "seed") if node.failed]
        rows = mirrored_rows(service.settings.warehouse, "analytics", "user_regions")
        assert set(rows) == expected and sum(rows.values()) == len(expected)

    seed.write_text("country_code,region,label\nNL,Europe,Netherlands\n")
    assert not [node.message for node in service.dbt(service.settings, "seed") if node.failed]
    assert mirrored_rows(service.settings.warehouse, "analytics", "user_regions") == {
        (("country_code", "NL"), ("label", "Netherlands"), ("region", "Europe")): 1}
