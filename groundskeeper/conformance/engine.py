"""The engine: runs a `groundskeeper:engine` component's `run(input)` with host Dock functions.

It owns instantiation under limits (fuel, memory, wall-clock deadline, output size), the
host side of the three Dock functions, and the `vfs-query` language. It refuses any
component that does not conform (rung 3, `conformance.py`) before instantiating it.

The Dock functions, as the component sees them (all answer strings; none ever raises):

- `session-info()` → JSON ``{"world", "run_id", "plan", "workdir"}`` (`plan` may be null).
- `vfs-query(query)` → JSON. Success: ``{"ok": true, "query", "count", "tasks": [{"id",
  "title", "state", "line"}]}`` in document order. Failure (bad query, no plan, unreadable
  plan): ``{"ok": false, "query", "error": "…"}``; never a silently empty answer.
- `run-command(cmdline)` → the command line's stdout, run in the sandbox shell with the
  workdir read-only. When the command fails (nonzero status, a limit, a syntax error) the
  answer is ``error: run-command: `CMDLINE` exited with status N[ (fault)]: STDERR``.

The query language of `vfs-query`:

- A query is one or more *terms*; terms are separated by `&` and/or whitespace and ALL must
  hold (a conjunction). `*` alone matches every task.
- A term is ``FIELD OP VALUE``. Fields: `state` (the TODO keyword, compared
  case-insensitively), `title`, `id` (the task id), `line` (1-based headline line).
  Operators: `=` equal, `!=` not equal, `~` contains (case-insensitive).
- A value is a bare word (no whitespace, `&`, `"`, `=`, `!`, `~`) or a double-quoted string
  in which `\\"` and `\\\\` are escapes.
- Examples: ``state=DONE``, ``title~pricing``, ``state!=DONE & title~"e2b pricing"``,
  ``id=gather-pricing``, ``line=4``. Anything else is an error naming the problem.

Engine diagnostic codes (`scope` is the component file name): E001 trap (including a host
function that failed), E002 fuel exhausted, E003 deadline, E004 output too large, E005
instantiation failed (e.g. a `wasi:*` interface this engine does not provide, or an input
that is not valid Unicode). A refusal carries the conformance diagnostics (C00x) instead.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import wasmtime
from wasmtime import component as wc

from groundskeeper.conformance.rules import (
    RUN_EXPORT,
    WORLD_NAME,
    Source,
    check_interface,
    component_engine,
    inspect_component,
)
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.errors import GroundskeeperError
from groundskeeper.sandbox.result import ShellResult

__all__ = [
    "DockHost",
    "EngineLimits",
    "EngineResult",
    "HostFunctionError",
    "QueryError",
    "Session",
    "SessionHost",
    "Term",
    "parse_query",
    "query_tasks",
    "run_component",
]

# The same figures the sandbox gives a command line.
DEFAULT_DEADLINE = 10.0  # seconds of wall-clock time for one `run`
MAX_DEADLINE = 24 * 3600.0  # beyond a day a deadline is not a limit any more
FUEL_PER_SECOND = 4_000_000_000
MEMORY_LIMIT = 256 * 1024 * 1024  # bytes of linear memory per memory
OUTPUT_LIMIT = 8 * 1024 * 1024  # bytes of `run`'s answer (UTF-8)
TICK = 0.01  # seconds per epoch tick; the deadline's resolution


class QueryError(GroundskeeperError):
    """A `vfs-query` query that does not parse; the message says what is wrong."""


# ---------------------------------------------------------------------------------------------
# vfs-query: parsing and answering.

Op = Literal["=", "!=", "~"]
FIELDS = ("state", "title", "id", "line")


@dataclass(frozen=True, slots=True)
class Term:
    field: str
    op: Op
    value: str

    def matches(self, task: dict[str, Any]) -> bool:
        actual = str(task[self.field] if task[self.field] is not None else "")
        wanted = self.value
        if self.op == "~":
            return wanted.casefold() in actual.casefold()
        equal = (
            actual.casefold() == wanted.casefold() if self.field == "state" else actual == wanted
        )
        return equal if self.op == "=" else not equal


_TERM_HEAD = re.compile(r"([a-z]+)\s*(!=|=|~)\s*")
_BARE = re.compile(r'[^\s&"=!~]+')


def parse_query(text: str) -> list[Term] | None:
    """The terms of a query (all must hold); None for `*` (every task). Raises QueryError."""
    stripped = text.strip()
    if stripped == "*":
        return None
    if not stripped:
        raise QueryError("empty query; use `*` for every task, or e.g. `state=DONE`")
    terms: list[Term] = []
    at = 0
    while True:
        while at < len(text) and (text[at].isspace() or text[at] == "&"):
            at += 1
        if at == len(text):
            break
        head = _TERM_HEAD.match(text, at)
        if head is None:
            raise QueryError(
                f"expected FIELD=VALUE, FIELD!=VALUE or FIELD~VALUE at column {at + 1}: "
                f"{text[at : at + 20]!r}"
            )
        name, op = head.group(1), head.group(2)
        if name not in FIELDS:
            raise QueryError(f"unknown field `{name}`; fields are {', '.join(FIELDS)}")
        at = head.end()
        value, at = _read_value(text, at, name)
        if name == "line" and not value.isdigit():
            raise QueryError(f"`line` takes a number, not {value!r}")
        terms.append(Term(name, op, value))  # type: ignore[arg-type]  # op matched the regex
    return terms


def _read_value(text: str, at: int, name: str) -> tuple[str, int]:
    if at < len(text) and text[at] == '"':
        chars: list[str] = []
        at += 1
        while at < len(text):
            char = text[at]
            if char == "\\" and at + 1 < len(text):
                chars.append(text[at + 1])
                at += 2
            elif char == '"':
                return "".join(chars), at + 1
            else:
                chars.append(char)
                at += 1
        raise QueryError(f"unterminated quoted value for `{name}`")
    bare = _BARE.match(text, at)
    if bare is None:
        raise QueryError(f"`{name}` has no value; quote it if it contains spaces or & = ! ~")
    return bare.group(0), bare.end()


def query_tasks(plan_path: Path, query: str) -> dict[str, Any]:
    """Answer a vfs-query against the plan at `plan_path`, as a JSON-native document."""
    from groundskeeper.plan.org import load_plan

    try:
        terms = parse_query(query)
    except QueryError as exc:
        return {"ok": False, "query": query, "error": str(exc)}
    try:
        plan = load_plan(plan_path)
    except GroundskeeperError as exc:
        return {"ok": False, "query": query, "error": f"cannot read the plan: {exc}"}
    tasks = [
        {"id": t.task_id, "title": t.title, "state": t.keyword, "line": t.line}
        for t in plan.tasks()
    ]
    found = [t for t in tasks if terms is None or all(term.matches(t) for term in terms)]
    return {"ok": True, "query": query, "count": len(found), "tasks": found}


# ---------------------------------------------------------------------------------------------
# The host side of the Dock functions.


class DockHost(Protocol):
    """What a component can ask of its host: the three Dock functions of engine.wit."""

    def session_info(self) -> str: ...

    def vfs_query(self, query: str) -> str: ...

    def run_command(self, cmdline: str) -> str: ...


@dataclass(frozen=True, slots=True)
class Session:
    """Who is running the component, on what: the answer behind `session-info`."""

    run_id: str
    workdir: Path
    plan: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "world": WORLD_NAME,
            "run_id": self.run_id,
            "plan": str(self.plan) if self.plan is not None else None,
            "workdir": str(self.workdir),
        }


ShellRunner = Callable[[str, Path], Any]


def _sandbox_runner(cmdline: str, workdir: Path) -> Any:
    from groundskeeper import sandbox

    return sandbox.run(cmdline, workdir=workdir, read_only=True)


@dataclass
class SessionHost:
    """The real Dock functions: the plan model for `vfs-query`, the sandbox shell (workdir
    read-only) for `run-command`. `shell` is swappable so the host itself can be tested."""

    session: Session
    shell: ShellRunner = _sandbox_runner
    calls: list[tuple[str, str]] = field(default_factory=list)

    def session_info(self) -> str:
        self.calls.append(("session-info", ""))
        return json.dumps(self.session.to_json(), ensure_ascii=False)

    def vfs_query(self, query: str) -> str:
        self.calls.append(("vfs-query", query))
        if self.session.plan is None:
            answer: dict[str, Any] = {
                "ok": False,
                "query": query,
                "error": "no plan in this session (run the engine with --plan PLAN)",
            }
        else:
            answer = query_tasks(self.session.plan, query)
        return json.dumps(answer, ensure_ascii=False)

    def run_command(self, cmdline: str) -> str:
        self.calls.append(("run-command", cmdline))
        try:
            result = self.shell(cmdline, self.session.workdir)
        except Exception as exc:  # fail closed: the component hears of it as an error answer
            return f"error: run-command: `{cmdline}` could not run: {type(exc).__name__}: {exc}"
        if not isinstance(result, ShellResult):
            return f"error: run-command: `{cmdline}` could not run: the sandbox gave no result"
        if result.status != 0 or result.fault is not None:
            fault = f" ({result.fault})" if result.fault else ""
            return (
                f"error: run-command: `{cmdline}` exited with status {result.status}{fault}: "
                f"{result.stderr.strip()}"
            )
        return result.stdout


# ---------------------------------------------------------------------------------------------
# Running.


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """Per-run limits; fuel defaults to FUEL_PER_SECOND × the deadline, as in the sandbox."""

    deadline: float = DEFAULT_DEADLINE
    memory: int = MEMORY_LIMIT
    output: int = OUTPUT_LIMIT
    fuel: int | None = None

    @property
    def fuel_budget(self) -> int:
        return self.fuel if self.fuel is not None else int(FUEL_PER_SECOND * self.deadline)


@dataclass(frozen=True, slots=True)
class EngineResult:
    """The outcome of one `run`: `output` is `run`'s answer, None unless `ok`."""

    ok: bool
    output: str | None
    diagnostics: list[Diagnostic]
    fuel_consumed: int | None
    duration_ms: float
    instantiated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "output": self.output,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "fuel_consumed": self.fuel_consumed,
            "duration_ms": round(self.duration_ms, 3),
            "instantiated": self.instantiated,
        }


class _Ticker:
    """Advances the shared engine's epoch every TICK seconds while any run is active, so every
    store's deadline counts the same clock (per-run timers would interrupt each other)."""

    def __init__(self) -> None:
        self.active = 0
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    @contextmanager
    def running(self) -> Iterator[None]:
        with self.lock:
            self.active += 1
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._loop, name="gk-engine-tick", daemon=True
                )
                self.thread.start()
            self.wake.set()
        try:
            yield
        finally:
            with self.lock:
                self.active -= 1

    def _loop(self) -> None:
        engine = component_engine()
        while True:
            self.wake.wait()
            time.sleep(TICK)
            engine.increment_epoch()
            with self.lock:
                if self.active == 0:
                    self.wake.clear()


_ticker = _Ticker()


def _cause(error: Exception) -> str:
    """The last line of a wasmtime error (after its backtrace): the actual cause."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    return lines[-1] if lines else type(error).__name__


def _runtime_diagnostic(error: Exception, scope: str, limits: EngineLimits) -> Diagnostic:
    cause = _cause(error)
    if "all fuel consumed" in cause:
        message = f"fuel exhausted: `run` used all {limits.fuel_budget} units of fuel"
        return Diagnostic("error", scope, message, code="E002")
    if cause.endswith("wasm trap: interrupt"):
        message = f"deadline: `run` did not finish within {limits.deadline:g} s"
        return Diagnostic("error", scope, message, code="E003")
    message = (
        f"trapped: {cause} (memory is capped at {limits.memory} bytes per memory; "
        "a memory.grow refused at the cap shows up as the guest's own trap)"
    )
    return Diagnostic("error", scope, message, code="E001")


class HostFunctionError(GroundskeeperError):
    """A Dock function's host side raised or answered something other than a string. It
    stops the run (E001): a component must never go on with an answer nobody gave."""

    def __init__(self, function: str, why: str) -> None:
        super().__init__(f"host function `{function}` failed: {why}")
        self.function = function


def _guarded(
    function: str, call: Callable[..., object], failures: list[HostFunctionError]
) -> Callable[..., str]:
    """`call` as a host function that never lets a Python exception reach wasmtime.

    wasmtime-py parks a host function's Python exception in one process-wide slot and
    re-raises it from the next failing call in *any* store, and not at all from a failed
    instantiation; a parallel run could then report another run's failure. So a failure is
    kept in this run's `failures` and the guest is stopped with a plain WasmtimeError.
    """

    def host_function(_store: object, *args: object) -> str:
        try:
            answer = call(*args)
            if not isinstance(answer, str):
                raise TypeError(f"answered {type(answer).__name__}, not a string")
            answer.encode("utf-8")  # a lone surrogate cannot cross into the component
        except Exception as exc:
            failure = HostFunctionError(function, f"{type(exc).__name__}: {exc}")
            failures.append(failure)
            raise wasmtime.WasmtimeError(str(failure)) from None
        return answer

    return host_function


def _is_limit(cause: str) -> bool:
    return "fuel" in cause or "interrupt" in cause


def _link(
    linker: wc.Linker, host: DockHost, imports: set[str], failures: list[HostFunctionError]
) -> None:
    if any(name.startswith("wasi:") for name in imports):
        linker.add_wasip2()
    with linker.root() as root:
        # Only what the component imports; wasmtime does not mind extra definitions, but
        # linking exactly the world keeps the engine's surface the component's.
        if "session-info" in imports:
            root.add_func("session-info", _guarded("session-info", host.session_info, failures))
        if "vfs-query" in imports:
            root.add_func("vfs-query", _guarded("vfs-query", host.vfs_query, failures))
        if "run-command" in imports:
            root.add_func("run-command", _guarded("run-command", host.run_command, failures))


_MAX_FUEL = 2**64 - 1  # wasmtime keeps fuel in a u64


def _limits_problem(limits: EngineLimits) -> str | None:
    if not (math.isfinite(limits.deadline) and 0 < limits.deadline <= MAX_DEADLINE):
        return f"deadline must be between 0 and {MAX_DEADLINE:g} seconds, not {limits.deadline}"
    if not 0 < limits.fuel_budget <= _MAX_FUEL:
        return f"fuel must be between 1 and {_MAX_FUEL}, not {limits.fuel_budget}"
    if limits.memory <= 0 or limits.output < 0:
        return f"memory ({limits.memory}) and output ({limits.output}) must be positive"
    return None


def run_component(
    source: Source,
    input_text: str,
    host: DockHost,
    limits: EngineLimits | None = None,
) -> EngineResult:
    """Check, then instantiate the component and call `run(input_text)` under `limits`.

    A non-conforming component is refused before instantiation (its diagnostics are
    returned). Raises `ComponentUnreadable` only when a path cannot be read.
    """
    limits = limits or EngineLimits()
    started = time.perf_counter()
    scope = Path(source).name if not isinstance(source, bytes | bytearray) else "<bytes>"
    problem = _limits_problem(limits)
    if problem is not None:  # fail closed: no run without limits that mean something
        refusal = Diagnostic("error", scope, f"unusable limits: {problem}", code="E005")
        return EngineResult(False, None, [refusal], None, 0.0, instantiated=False)
    component, interface, diagnostics = inspect_component(source)
    if component is not None and not diagnostics:
        diagnostics = check_interface(interface)
    if component is None or diagnostics:
        elapsed = (time.perf_counter() - started) * 1000
        return EngineResult(False, None, diagnostics, None, elapsed, instantiated=False)

    engine = component_engine()
    store = wasmtime.Store(engine)
    store.set_fuel(limits.fuel_budget)
    store.set_limits(memory_size=limits.memory)
    store.set_epoch_deadline(max(1, math.ceil(limits.deadline / TICK)))
    imports = {item["name"] for item in interface.imports}
    if any(name.startswith("wasi:") for name in imports):
        store.set_wasi(wasmtime.WasiConfig())  # no args, env, preopens or inherited stdio
    linker = wc.Linker(engine)

    def finish(ok: bool, output: str | None, found: list[Diagnostic], inst: bool) -> EngineResult:
        consumed = limits.fuel_budget - store.get_fuel()
        elapsed = (time.perf_counter() - started) * 1000
        return EngineResult(ok, output, found, consumed, elapsed, instantiated=inst)

    failures: list[HostFunctionError] = []

    def failed(exc: Exception, instantiated: bool) -> EngineResult:
        if failures:  # the trap was a host function's failure: say which, not "trap"
            message = f"trapped: {failures[0]}"
            found = Diagnostic("error", scope, message, code="E001")
        elif not instantiated and not isinstance(exc, wasmtime.WasmtimeError):
            found = Diagnostic("error", scope, f"instantiation failed: {exc!r}", code="E005")
        elif not isinstance(exc, wasmtime.WasmtimeError):
            found = Diagnostic("error", scope, f"trapped: {exc!r}", code="E001")
        elif not instantiated and not _is_limit(_cause(exc)):
            found = Diagnostic("error", scope, f"instantiation failed: {_cause(exc)}", code="E005")
        else:
            found = _runtime_diagnostic(exc, scope, limits)
        return finish(False, None, [found], instantiated)

    try:
        input_text.encode("utf-8")
    except UnicodeEncodeError as exc:
        message = f"the input is not valid Unicode text ({exc.reason} at {exc.start})"
        return finish(False, None, [Diagnostic("error", scope, message, code="E005")], False)
    with _ticker.running():
        try:
            _link(linker, host, imports, failures)
            instance = linker.instantiate(store, component)
        except Exception as exc:  # fail closed: whatever stops instantiation is a refusal
            return failed(exc, instantiated=False)
        run = instance.get_func(store, RUN_EXPORT)
        if run is None:
            message = "the instantiated component has no `run` function"
            return finish(False, None, [Diagnostic("error", scope, message, code="E005")], True)
        try:
            output = run(store, input_text)
        except Exception as exc:  # fail closed: nothing that goes wrong reads as an answer
            return failed(exc, instantiated=True)
    if not isinstance(output, str):
        message = f"`run` answered {type(output).__name__}, not a string"
        return finish(False, None, [Diagnostic("error", scope, message, code="E001")], True)
    size = len(output.encode("utf-8"))
    if size > limits.output:
        message = f"output too large: {size} bytes, the limit is {limits.output}"
        return finish(False, None, [Diagnostic("error", scope, message, code="E004")], True)
    return finish(True, output, [], True)
