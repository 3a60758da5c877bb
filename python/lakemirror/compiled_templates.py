"""dbt's jinja environments reuse the Python code of a template source they already compiled in
this process, instead of parsing and generating it again.

dbt compiles every jinja string from scratch: each node's hooks, `enabled` expressions, config
calls and SQL, in a fresh environment per string. A cold `dbt parse` of a project of 150 mirror
models compiled 5,871 strings, of which 1,529 distinct (compiling was about a quarter of the
parse), and a run compiles each model's hooks and SQL again per node. Reusing the code took
that parse from 12.4 to 9.8 CPU seconds (medians of 5 alternating runs), for 3.5 MiB of
cached code (some 2.4 KiB a source).

Safe because the code object is a pure function of what the key holds: jinja's
`Environment.compile` reads the source, the name and filename, `defer_init`, and from the
environment only its class (parser, sandbox) and code generator class, its extensions, its lexer
settings, its filters and tests (a name must exist at compile time, a function's `pass_context`
shapes the call, and the optimizer folds constant calls with the function itself), `finalize`,
`autoescape`, `optimized`, `is_async` and the sandbox's intercepted operators. A template's
globals, its context and its undefined type are bound when the code runs, per `Template`, never
at compile; the cached code is only ever executed again (`Template.from_code`). Bounded (at
CAPACITY sources, some 50 MiB at that weight, the least recently used out), so that months of
`run --watch` over edited models stay bounded.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from types import CodeType
from typing import Any

CAPACITY = 20_000
LEXER_SETTINGS = (
    "block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
    "comment_start_string", "comment_end_string", "line_statement_prefix",
    "line_comment_prefix", "trim_blocks", "lstrip_blocks", "newline_sequence",
    "keep_trailing_newline")
ENVIRONMENT_SETTINGS = (
    "finalize", "autoescape", "optimized", "is_async", "intercepted_binops", "intercepted_unops",
    "code_generator_class")

Compile = Callable[..., Any]


class CompiledCode:
    """Code objects by what their compile read, the least recently used dropped beyond
    `capacity`; each step under a lock, as dbt renders from several threads. Equal environment
    settings are kept once, shared by their keys (an environment's filters and tests alone
    weigh some 8 KB: a copy per key would outweigh the code)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._codes: OrderedDict[Hashable, CodeType] = OrderedDict()
        self._settings: dict[Hashable, Hashable] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._codes)

    def key(self, settings: Hashable, *template: Hashable) -> Hashable:
        """The key of `template` compiled with `settings`, which it shares with every key of
        equal settings (raises TypeError when part of them cannot be hashed)."""
        with self._lock:
            if len(self._settings) >= self.capacity:
                self._settings.clear()
            return self._settings.setdefault(settings, settings), *template

    def get(self, key: Hashable) -> CodeType | None:
        with self._lock:
            code = self._codes.get(key)
            if code is not None:
                self._codes.move_to_end(key)
            return code

    def put(self, key: Hashable, code: CodeType) -> None:
        with self._lock:
            self._codes[key] = code
            self._codes.move_to_end(key)
            while len(self._codes) > self.capacity:
                self._codes.popitem(last=False)


_compiled = CompiledCode(CAPACITY)


def reuse_compiled_templates() -> None:
    """Make dbt's jinja environments (dbt-common's MacroFuzzEnvironment and its native
    subclass) reuse compiled code; once per process, later calls do nothing."""
    from dbt_common.clients.jinja import MacroFuzzEnvironment

    if not hasattr(MacroFuzzEnvironment.compile, "__wrapped__"):
        setattr(MacroFuzzEnvironment, "compile",
                compiling_once(MacroFuzzEnvironment.compile, _compiled))


def compiling_once(compile_template: Compile, compiled: CompiledCode) -> Compile:
    """`Environment.compile` that keeps what `compile_template` makes of a source string in
    `compiled`. Left to `compile_template`: an already parsed source, `raw` (Python text), dbt's
    macro debugging (which names each compile's code after a file of its own), and environments
    whose filters or tests cannot be hashed."""
    from jinja2.utils import internalcode

    @internalcode
    @functools.wraps(compile_template)
    def compile_once(environment: Any, source: Any, name: str | None = None,
                     filename: str | None = None, raw: bool = False,
                     defer_init: bool = False) -> Any:
        key = (None if raw or not isinstance(source, str) or _macro_debugging()
               else _key(compiled, environment, source, name, filename, defer_init))
        code = None if key is None else compiled.get(key)
        if code is None:
            code = compile_template(environment, source, name, filename, raw, defer_init)
            if key is not None:
                compiled.put(key, code)
        return code

    return compile_once


def _key(compiled: CompiledCode, environment: Any, source: str, name: str | None,
         filename: str | None, defer_init: bool) -> Hashable | None:
    """All that jinja's compile of `source` reads (see the module's docstring), or None when
    part of it cannot be hashed."""
    try:
        settings = (type(environment),
                    tuple(sorted((identifier, type(extension))
                                 for identifier, extension in environment.extensions.items())),
                    frozenset(environment.filters.items()), frozenset(environment.tests.items()),
                    *(getattr(environment, setting, None)
                      for setting in LEXER_SETTINGS + ENVIRONMENT_SETTINGS))
        return compiled.key(settings, source, name, filename, defer_init)
    except TypeError:
        return None


def _macro_debugging() -> bool:
    from dbt_common.clients import jinja

    return bool(jinja.MACRO_DEBUGGING)
