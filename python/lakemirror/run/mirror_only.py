"""A project dbt cannot parse (a user's model with broken Jinja, a `ref` to no model) stops
every dbt command on it, the mirror's too. Its mirror models still build from a view of the
project that holds them alone: a folder of links to the project's files whose `.dbtignore`
hides everything but the macros and the generated models. The project itself is never
touched; the view lives in lakemirror's home."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import yaml

from lakemirror.codegen import MIRROR_FOLDER

IGNORE_FILE = ".dbtignore"
NOT_LINKED = frozenset({"target", "logs", IGNORE_FILE})  # the view's own, or dbt's scratch


def mirror_only_project(project_dir: Path, home: Path) -> Path:
    """The mirror-only view of `project_dir` (made, or brought up to date), in `home`: one
    folder per project, so a long-lived process parses the same view again."""
    digest = hashlib.sha256(str(project_dir).encode()).hexdigest()[:16]
    view = home / "mirror-only" / digest
    view.mkdir(parents=True, exist_ok=True)
    entries = {entry.name for entry in project_dir.iterdir()} - NOT_LINKED
    for name in entries:
        _link(view / name, project_dir / name)
    for stale in view.iterdir():
        if stale.is_symlink() and stale.name not in entries:
            stale.unlink()
    _write(view / IGNORE_FILE, _ignored(project_dir))
    return view


def _ignored(project_dir: Path) -> str:
    """The view's `.dbtignore`: every file but the macros' and the generated models', then
    the project's own (the last pattern that matches a file decides)."""
    own = project_dir / IGNORE_FILE
    kept = [f"!/{path.strip('/')}/" for path in _macro_paths(project_dir)]
    return "\n".join(["/*", *kept, f"!/{MIRROR_FOLDER.parts[0]}/",
                      f"/{MIRROR_FOLDER.parts[0]}/*", f"!/{MIRROR_FOLDER.as_posix()}/",
                      *(own.read_text().splitlines() if own.is_file() else []), ""])


def _macro_paths(project_dir: Path) -> list[str]:
    try:
        config = yaml.safe_load((project_dir / "dbt_project.yml").read_text()) or {}
        paths = config.get("macro-paths") or ["macros"]
    except (OSError, yaml.YAMLError, AttributeError):
        return ["macros"]
    return [str(path) for path in paths] if isinstance(paths, list) else ["macros"]


def _link(link: Path, target: Path) -> None:
    """`link` → `target`, replaced in one step when it pointed elsewhere."""
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    fresh = link.with_name(f".{link.name}.{os.getpid()}.link")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(target)
    os.replace(fresh, link)


def _write(path: Path, text: str) -> None:
    if path.is_file() and path.read_text() == text:
        return
    fresh = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fresh.write_text(text)
    os.replace(fresh, path)
