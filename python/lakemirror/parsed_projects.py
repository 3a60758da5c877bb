"""Parsed dbt projects kept in memory, so a long-lived process (`lakemirror run --watch`, the
freshness benchmark) skips dbt's parse while the project's files stay unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROJECT_PARTS = ("models", "macros", "seeds", "snapshots", "tests", "analyses", "profiles")
PROJECT_FILES = ("dbt_project.yml", "packages.yml", "dependencies.yml")

Fingerprint = tuple[tuple[str, int, int], ...]
# Process-wide, keyed by all the parse reads (project, target, vars: runs on two warehouses
# never share an entry), each step a single dict operation, safe under threads.
_parsed: dict[tuple[str, ...], tuple[Fingerprint, Any]] = {}


def parsed_manifest(args: list[str], project_dir: Path, key: tuple[str, ...]) -> Any | None:
    """The manifest of `dbt parse <args>`, parsed again only when a project file changed since
    the last call with the same `key` (project, target, vars). None when dbt
    cannot parse the project: the caller's own invocation then reports why."""
    fingerprint = project_fingerprint(project_dir)
    cached = _parsed.get(key)
    if cached and cached[0] == fingerprint:
        return cached[1]
    manifest = parse_project(args)
    if manifest is None:
        _parsed.pop(key, None)
        return None
    _parsed[key] = (fingerprint, manifest)
    return manifest


def parse_project(args: list[str]) -> Any | None:
    """The manifest of `dbt parse <args>` (a partial parse when dbt's target/ allows it),
    not kept; None when dbt cannot parse the project."""
    from dbt.cli.main import dbtRunner

    outcome = dbtRunner().invoke(["parse", *args])
    return outcome.result if outcome.success and outcome.result is not None else None


def project_fingerprint(project_dir: Path) -> Fingerprint:
    """Path, modification time and size of every file dbt reads from the project."""
    paths = [project_dir / name for name in PROJECT_FILES]
    for part in PROJECT_PARTS:
        paths += (project_dir / part).rglob("*") if (project_dir / part).is_dir() else []
    stats = []
    for path in paths:
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        if path.is_file():
            stats.append((str(path.relative_to(project_dir)), stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(stats))
