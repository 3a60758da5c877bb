"""Parsed dbt projects: kept in memory, so a long-lived process (`lakemirror run --watch`, the
freshness benchmark) skips dbt's parse while the project's files stay unchanged; and dbt's own
partial-parse state kept on disk apart for each set of vars lakemirror parses with, so a run
after an unchanged project's last run (or after a plain `dbt build`, which parses without
lakemirror's vars) finds it and parses only what changed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lakemirror.compiled_templates import reuse_compiled_templates

PROJECT_PARTS = ("models", "macros", "seeds", "snapshots", "tests", "analyses", "profiles")
PROJECT_FILES = ("dbt_project.yml", "packages.yml", "dependencies.yml")
PARSES_FOLDER = Path("target", "lakemirror_parses")  # in the project: one folder per parse key

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

    reuse_compiled_templates()
    outcome = dbtRunner().invoke(["parse", *args])
    return outcome.result if outcome.success and outcome.result is not None else None


def parse_target(project_dir: Path, args: Sequence[str], parse_vars: Mapping[str, object]
                 ) -> list[str]:
    """dbt's `--target-path` for a parse of the project with the command-line `args` and
    `parse_vars`: a folder of its own for each, where dbt keeps its partial-parse state
    (partial_parse.msgpack). dbt keeps one such file per target folder and parses the whole
    project again whenever the vars, the profile or the target differ from those it was
    written with: sharing target/ with plain dbt (no vars), or with runs on another warehouse
    (other vars), would make each of them parse it all. Whatever else changed (a file, an
    environment variable a file or dbt_project.yml reads, dbt's version) dbt's own checks
    still find: the folder only spares it the changes that are not changes."""
    described = json.dumps([list(args), parse_vars], sort_keys=True, default=str)
    key = hashlib.sha256(described.encode()).hexdigest()[:16]
    return ["--target-path", str(project_dir / PARSES_FOLDER / key)]


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
