"""The contenders of `lakemirror bench`, each run in its own process so its time and peak memory
are its own: `python -m lakemirror.bench.contenders NAME ZONE OUT`.

Every contender mirrors every table folder of the landing zone ZONE into OUT and prints the
paths of the final tables as JSON: {"dbo.bench1": path, ...}. A contender with a preparation
(`PREPARATIONS`) gets it first, untimed, in a process of its own:
`python -m lakemirror.bench.contenders --prepare NAME ZONE OUT`; the zone is then restored.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

STARTED = time.perf_counter()  # the contender process's start of work: its imports follow

from lakemirror.bench.deltars_direct import run_deltars, run_deltars_batched
from lakemirror.bench.floor import run_floor

PROJECT_ITEMS = ("dbt_project.yml", "macros", "profiles")
PHASES_FILE = "phases.json"  # a lakemirror contender's phases (bench/phases.py), in OUT


def table_folders(zone: Path) -> list[Path]:
    return sorted(path for path in zone.iterdir() if (path / "_metadata.json").is_file())


def _per_table(run: Callable[[Path, Path], Path]) -> Callable[[Path, Path], dict[str, str]]:
    def contender(zone: Path, out: Path) -> dict[str, str]:
        return {f"dbo.{folder.name.lower()}": str(run(folder, out / folder.name))
                for folder in table_folders(zone)}
    return contender


def run_lakemirror(zone: Path, out: Path, target: str = "embedded") -> dict[str, str]:
    """`lakemirror run` on the zone with a fresh private copy of the dbt project (cold: dbt
    parses it from scratch, lakemirror generates its models)."""
    return _mirror(zone, out, private_project(out / "project"), target)


def warm_up(zone: Path, out: Path) -> None:
    """The preparation of `lakemirror-warm`: a first run of the same project on the same
    zone and warehouse paths, whose warehouse is then removed (the runner restores the zone),
    so the timed run does the same work with the project as a user's second run finds it
    (models generated, dbt's partial parse in target/)."""
    run_lakemirror(zone, out)
    shutil.rmtree(out / "warehouse")


def run_lakemirror_warm(zone: Path, out: Path) -> dict[str, str]:
    """`lakemirror run` on the zone with the project `warm_up` left."""
    return _mirror(zone, out, out / "project", "embedded")


def _mirror(zone: Path, out: Path, project: Path, target: str) -> dict[str, str]:
    from lakemirror.bench.phases import recorded_phases
    from lakemirror.service import MirrorService, RunSettings

    settings = RunSettings.given(zone, out / "warehouse", project, target=target, quiet=True)
    started = time.perf_counter()
    with recorded_phases() as (clock, timed_dbt):
        statuses = MirrorService(settings, dbt=timed_dbt).run()
    (out / PHASES_FILE).write_text(json.dumps(clock.report(
        imports=started - STARTED, total=time.perf_counter() - started)))
    failed = [status for status in statuses if status.status != "replicating"]
    if failed:
        raise RuntimeError(f"lakemirror left {failed[0].schema}.{failed[0].table} "
                           f"{failed[0].status}: {failed[0].error}")
    return {f"dbo.{folder.name.lower()}": str(settings.layout.mirrored_path("dbo",
                                                                            folder.name.lower()))
            for folder in table_folders(zone)}


def private_project(project: Path, items: tuple[str, ...] = PROJECT_ITEMS,
                    delta_features: tuple[str, ...] = (),
                    readers: tuple[str, ...] = (),
                    models: Mapping[str, str] | None = None) -> Path:
    """A copy of `items` of lakemirror's dbt package (the one installed: a wheel carries it,
    a git clone is it) at `project`, so generated models stay out of the package; its mirror
    models take `delta_features` and the reader set `readers` (docs/pages/table-settings.md);
    `models` (name → SQL) are models of the user's own, in models/user."""
    from lakemirror.project.locate import dbt_package_dir

    package = dbt_package_dir()
    project.mkdir(parents=True, exist_ok=True)
    for item in items:
        source = package / item
        if source.is_dir():
            shutil.copytree(source, project / item)
        else:
            shutil.copy(source, project / item)
    if delta_features:
        _configure_mirror_models(project, {"+delta_features": list(delta_features)})
    if readers:
        _configure_mirror_models(project, {"+lakemirror_readers": list(readers)})
    if models:
        (project / "models" / "user").mkdir(parents=True)
        for name, sql in models.items():
            (project / "models" / "user" / f"{name}.sql").write_text(sql)
    return project


def _configure_mirror_models(project: Path, config: dict[str, object]) -> None:
    """Add `config` to the mirror models' folder in the (private) project's dbt_project.yml."""
    import yaml

    path = project / "dbt_project.yml"
    settings = yaml.safe_load(path.read_text())
    settings["models"]["lakemirror"]["mirror"].update(config)
    path.write_text(yaml.safe_dump(settings, sort_keys=False))


def run_spark(zone: Path, out: Path) -> dict[str, str]:
    """`lakemirror run --target spark`; the JVM is stopped and waited for before the process
    exits, so the bench's peak memory is the larger of the Python and the JVM processes'."""
    from lakemirror.engine.spark import shut_down_spark

    try:
        return run_lakemirror(zone, out, target="spark")
    finally:
        shut_down_spark()


CONTENDERS: dict[str, Callable[[Path, Path], dict[str, str]]] = {
    "lakemirror": run_lakemirror,
    "lakemirror-warm": run_lakemirror_warm,
    "delta-rs": _per_table(run_deltars),
    "delta-rs-batched": _per_table(run_deltars_batched),
    "floor": _per_table(run_floor),
    "spark": run_spark,
}
PREPARATIONS: dict[str, Callable[[Path, Path], None]] = {"lakemirror-warm": warm_up}
DELTARS = ("delta-rs", "delta-rs-batched")


def skip_reason(name: str) -> str | None:
    """Why a contender cannot run on this machine, or None."""
    from lakemirror.engine.spark import spark_unavailable

    return spark_unavailable() if name == "spark" else None


def main() -> None:
    if sys.argv[1] == "--prepare":
        PREPARATIONS[sys.argv[2]](Path(sys.argv[3]), Path(sys.argv[4]))
        return
    name, zone, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    print(json.dumps(CONTENDERS[name](zone, out)))


if __name__ == "__main__":
    main()
