"""The CLI's one error boundary: every failure of every command becomes one clean line on
stderr, or, when the command line asks for `--json`, one JSON document on stdout, with the
exit code of `ExitCode`."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from lakemirror.errors import ExitCode, LakemirrorError
from lakemirror.storage.secrets import redact

JSON_FLAG = "--json"
_WANTS_JSON = "lakemirror.json"  # ctx.meta key, shared by the group's and its commands' contexts


def asks_for_json(args: Sequence[str]) -> bool:
    """Whether the command line asks for JSON (`--json` before any `--`), read from the raw
    arguments so that even a command line click refuses gets its answer as JSON."""
    options = list(args)
    return JSON_FLAG in (options[:options.index("--")] if "--" in options else options)


def error_document(kind: str, message: str, *, fix: str | None = None,
                   table: str | None = None, file: str | None = None) -> str:
    """The JSON document of a refused or failed command, with any credential redacted."""
    return redact(json.dumps({"error": {"kind": kind, "message": message, "fix": fix,
                                        "table": table, "file": file}}, indent=2))


class ErrorBoundary(click.Group):
    """Domain errors → their exit code and their message (one line on stderr, and the JSON
    error document on stdout with `--json`); usage errors → exit code 2, as JSON too with
    `--json`; any other error (a bug) → exit code 1 the same way, and the traceback only with
    --debug."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_WANTS_JSON] = asks_for_json(args)
        try:
            return super().parse_args(ctx, args)
        except click.ClickException as error:
            _usage_error(ctx, error)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            _usage_error(ctx, error)
        except (click.exceptions.Exit, click.Abort):
            raise
        except LakemirrorError as error:
            if ctx.meta.get("debug"):
                raise
            _fail(ctx, error.exit_code, error_document(
                type(error).__name__, error.message, fix=error.hint, table=error.table,
                file=error.file), f"error: {error}")
        except Exception as error:
            if ctx.meta.get("debug"):
                raise
            fix = "run again with --debug to see the traceback, and report it"
            message = f"unexpected {type(error).__name__}: {error}"
            _fail(ctx, ExitCode.FAILED, error_document("UnexpectedError", message, fix=fix),
                  f"error: {message} Fix: {fix}")


def _usage_error(ctx: click.Context, error: click.ClickException) -> NoReturn:
    """A command line click refuses (or an argument it cannot use): click's own message, or
    the JSON error document (exit code 2)."""
    if not ctx.meta.get(_WANTS_JSON):
        raise error
    command = getattr(error, "ctx", None)
    hint = None if command is None else f"see `{command.command_path} --help`"
    _fail(ctx, ExitCode.CONFIG, error_document("UsageError", error.format_message(), fix=hint),
          f"error: {error.format_message()}")


def _fail(ctx: click.Context, code: ExitCode, document: str, line: str) -> NoReturn:
    """The line on stderr, for people and logs; with `--json`, the document on stdout too."""
    click.secho(redact(line), fg="red", err=True)
    if ctx.meta.get(_WANTS_JSON):
        click.echo(document)
    sys.exit(code)
