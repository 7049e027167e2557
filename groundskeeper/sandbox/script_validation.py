"""Validates a generated workflow script in a zero-tool sandbox, before it is saved or run.

It owns the rules a workflow script must meet (a `workflow` object; producers with a
`schedule` and a `handler`; consumers with `subscribe` and `prepare`), the messages that
tell a model how to fix a script, and the config extracted from a valid one. The script is
evaluated by QuickJS in WebAssembly (`groundskeeper.sandbox.quickjs`: no files, no
environment, deadline, fuel and memory limits); every global it reaches for that JavaScript
itself does not define is a tool namespace whose calls throw `Tool calls not allowed during
validation`. It does not own where scripts come from (the CLI, lint and contracts call it).
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundskeeper.errors import UsageError
from groundskeeper.sandbox.result import SandboxError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from groundskeeper.sandbox.quickjs import ScriptRun

__all__ = [
    "MAX_SCRIPT_BYTES",
    "TOOL_CALL_MESSAGE",
    "ScriptFileError",
    "ScriptIssue",
    "ScriptValidation",
    "read_script",
    "validate_script",
    "validate_script_file",
]

MAX_SCRIPT_BYTES = 256 * 1024  # a workflow script is code a model wrote, not data
TOOL_CALL_MESSAGE = "Tool calls not allowed during validation"
# Globals a script may not have: a ReferenceError names each (`typeof std` too).
ABSENT_GLOBALS = (
    "require", "module", "exports", "process", "fs", "std", "os", "bjson", "print", "Deno", "Bun",
)  # fmt: skip
# completes "NAME" in the ReferenceError a script gets for one of ABSENT_GLOBALS
ABSENT_MESSAGE = (
    " is not defined: workflow scripts run without modules, files or a system API"
    " (no require, fs, std, os or process); use the tool namespaces inside handlers"
)
# Generations of promise jobs the script's top level may leave that still run in validation
PROMISE_ROUNDS = 1000
_SHOWN_ERROR = 300  # characters of an exception's message quoted back

# What runs in QuickJS around the script (a module; how it reads the script back, and why
# the script cannot tamper with that, is said at its top).
HARNESS = Path(__file__).with_name("script_harness.js")


class ScriptFileError(UsageError):
    """A script file that cannot be read as text at all (the message names it and the fix)."""


@dataclass(frozen=True)
class ScriptIssue:
    """One finding: `code` is a stable reason, `message` is written for the model fixing the
    script, `line` (1-based, in the script) where the script itself says where."""

    code: str
    message: str
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "line": self.line}


@dataclass(frozen=True)
class ScriptValidation:
    """The verdict on one script. `ok` means no errors (warnings may remain); `config` is the
    extracted workflow config, present only when `ok`."""

    ok: bool
    errors: tuple[ScriptIssue, ...]
    warnings: tuple[ScriptIssue, ...] = ()
    config: dict[str, Any] | None = None
    duration_ms: float = 0.0

    @property
    def message(self) -> str:
        """Every error's message, one after another (what goes back to a model)."""
        return "; ".join(issue.message for issue in self.errors)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": [issue.to_json() for issue in self.errors],
            "warnings": [issue.to_json() for issue in self.warnings],
            "config": self.config,
            "duration_ms": round(self.duration_ms, 3),
        }


def validate_script(source: str, *, timeout: float | None = None) -> ScriptValidation:
    """Evaluate `source` in the zero-tool sandbox and judge its `workflow` (see module doc).

    Never raises for anything in `source`; raises `SandboxError` only when QuickJS is not
    installed or the sandbox itself is broken."""
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SCRIPT_BYTES:
        return _too_large(str(size))
    import groundskeeper.sandbox.quickjs as quickjs  # wasmtime is imported only when needed

    timeout = quickjs.TIMEOUT if timeout is None else timeout
    run, report = _evaluate(source, ABSENT_GLOBALS, timeout)
    if report is None:
        if run.completed:  # ran to its end, yet not the one record: something else printed
            message = (
                "the script printed to stdout while loading (only `import('qjs:std')` can, and"
                " workflow scripts must not import modules): remove the import"
            )
            issue = ScriptIssue("stray-output", message)
        else:
            issue = _failed_run(run, timeout)
        return ScriptValidation(False, (issue,), duration_ms=run.duration_ms)
    errors, warnings, config = _judge(report, source)
    duration = run.duration_ms
    touched = [n for n in report.get("touched", ()) if isinstance(n, str)]
    if not errors and touched:
        # the same script with those names undefined, as in a runtime without them
        # (adversary-28 F5: it showed the validator one workflow and exported another)
        again, other = _evaluate(source, (*ABSENT_GLOBALS, *touched), timeout)
        duration += again.duration_ms
        second = _judge(other, source) if other is not None else None
        if second is None or second[0] or second[2] != config:
            names = ", ".join(f"`{n}`" for n in touched[:5])
            message = (
                f"the script reads {names} as it loads: a tool namespace to the validator, an"
                " undefined name where that tool is not there, and what it exports depends on"
                " which: the workflow judged here need not be the one that runs; read tool"
                " namespaces inside handlers only"
            )
            errors = [ScriptIssue("workflow-depends-on-sandbox", message)]
    return ScriptValidation(
        not errors, tuple(errors), tuple(warnings), None if errors else config, duration
    )


def _evaluate(
    source: str, absent: Iterable[str], timeout: float
) -> tuple[ScriptRun, dict[str, Any] | None]:
    """One run of the harness around `source` (names in `absent` undefined): the run and the
    one record it printed (None: it printed none, or more)."""
    import groundskeeper.sandbox.quickjs as quickjs

    nonce = f"__GK_SCRIPT_{secrets.token_hex(16)}__"
    values = {
        "source": source,
        "nonce": nonce,
        "absentNames": list(absent),
        "absentMessage": ABSENT_MESSAGE,
        "toolMessage": TOOL_CALL_MESSAGE,
        "promiseRounds": PROMISE_ROUNDS,
    }
    # JSON literals are JavaScript literals: the script can never end the string it is in
    constants = "".join(f"const {k} = {json.dumps(v)};\n" for k, v in values.items())
    run = quickjs.run_program(constants + _harness(), timeout=timeout, module=True)
    return run, _report(run.stdout, nonce) if run.completed else None


@functools.cache
def _harness() -> str:
    try:
        return HARNESS.read_text(encoding="utf-8")
    except OSError as error:
        raise SandboxError(f"cannot read {HARNESS}: {error}; reinstall groundskeeper") from error


def read_script(path: Path) -> str | ScriptValidation:
    """The text of the script at `path`, or the verdict when it is over the size limit (read
    no further than the limit). Raises ScriptFileError for a missing file, a directory, a
    FIFO or device, or bytes that are not UTF-8 text."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as error:
        raise ScriptFileError(f"{path}: no such file; pass the path of a .js file") from error
    except OSError as error:
        raise ScriptFileError(f"{path}: cannot open: {error.strerror}") from error
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # a FIFO or a device would block or never end
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ScriptFileError(f"{path}: is a directory; pass the path of a .js file")
        raise ScriptFileError(f"{path}: not a regular file (a FIFO, socket or device)")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_SCRIPT_BYTES + 1)
        except OSError as error:
            raise ScriptFileError(f"{path}: cannot read: {error.strerror}") from error
    if len(data) > MAX_SCRIPT_BYTES:
        return _too_large(f"over {MAX_SCRIPT_BYTES}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        message = f"{path}:{line}: not valid UTF-8; save the script as UTF-8"
        raise ScriptFileError(message) from error


def validate_script_file(path: Path, *, timeout: float | None = None) -> ScriptValidation:
    """`validate_script` on the file at `path` (see `read_script` for what raises)."""
    text = read_script(path)
    if isinstance(text, ScriptValidation):
        return text
    return validate_script(text, timeout=timeout)


def _too_large(size: str) -> ScriptValidation:
    message = (
        f"the script is {size} bytes; the limit is {MAX_SCRIPT_BYTES} bytes (size limit):"
        " a workflow script should hold code, not data; fetch large data inside a handler"
    )
    return ScriptValidation(False, (ScriptIssue("script-too-large", message),))


def _report(stdout: str, nonce: str) -> dict[str, Any] | None:
    """The harness's one record, or None when stdout is anything else (fail closed)."""
    lines = stdout.split("\n")
    if len(lines) != 2 or lines[1] != "" or not lines[0].startswith(nonce):
        return None
    try:
        report = json.loads(lines[0][len(nonce) :], object_hook=_well_formed)
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


def _well_formed(pairs: dict[str, Any]) -> dict[str, Any]:
    """JavaScript strings may hold lone surrogates (`"\\uD800"` in a script), which no UTF-8
    output can carry: each becomes U+FFFD, in keys and values alike, as JSON is read back."""
    return {_text_of(k): _text_of(v) if isinstance(v, str) else _items(v) for k, v in pairs.items()}


def _items(value: Any) -> Any:
    return (
        [_text_of(v) if isinstance(v, str) else v for v in value]
        if isinstance(value, list)
        else value
    )


def _text_of(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _failed_run(run: ScriptRun, timeout: float) -> ScriptIssue:
    fault, stderr = run.fault, run.stderr
    if fault == "deadline":
        message = (
            f"the script did not finish loading within {timeout:g} s (deadline): code at the"
            " top level must not loop or wait; put work inside handlers"
        )
        return ScriptIssue("deadline", message)
    if fault == "memory" or "out of memory" in stderr:
        return ScriptIssue("memory", _memory_message())
    if fault == "fuel":
        message = (
            "the script ran out of fuel while loading (fuel limit): top-level code must be short"
        )
        return ScriptIssue("fuel", message)
    if fault == "output":
        message = "the script's workflow is too large to describe (output limit)"
        return ScriptIssue("output", message)
    if run.trap.startswith("exit "):
        message = (
            f"the script ended the interpreter while loading ({run.trap}, through"
            " `import('qjs:std')`): workflow scripts must not import modules"
        )
        return ScriptIssue("exit", message)
    if run.trap == "stack overflow":
        message = (
            "the script recursed too deeply while loading (stack limit): a function called at"
            " the top level must not call itself without end"
        )
        return ScriptIssue("stack", message)
    detail = run.trap or _first_line(stderr) or "no message"
    message = (
        f"the sandbox stopped the script before it finished loading ({fault or 'error'}): {detail}"
    )
    return ScriptIssue("sandbox-fault", message)


def _memory_message() -> str:
    import groundskeeper.sandbox.quickjs as quickjs

    limit = quickjs.HEAP_LIMIT // (1024 * 1024)
    return (
        f"the script used more than {limit} MiB of memory while loading (memory limit):"
        " code at the top level must not build large data; put work inside handlers"
    )


# ---- the rules ----------------------------------------------------------------------------

_MODULE_SYNTAX = re.compile(r"(import|export)\b(?!\s*\()")  # not import(…), an expression
_LINE = re.compile(r"<input>:(\d+)(?::(\d+))?")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


@dataclass
class _Findings:
    source: str = ""
    errors: list[ScriptIssue] = field(default_factory=list)
    warnings: list[ScriptIssue] = field(default_factory=list)
    line: int | None = None  # the line of the entry being judged, when the text shows it

    def error(self, code: str, message: str) -> None:
        self.errors.append(ScriptIssue(code, message, self.line))

    def locate(self, name: str) -> None:
        """Point findings at the one line where `name` is written as a key (`name:`,
        `"name":`); none when the text has it as a key on no line or on several: a guess
        the text does not settle is no line at all."""
        if not name:
            self.line = None
            return
        escaped = re.escape(name)
        key = re.compile(rf"(?<![\w$])(?:{escaped}|\"{escaped}\"|'{escaped}')\s*:")
        lines = [n for n, text in enumerate(self.source.split("\n"), 1) if key.search(text)]
        self.line = lines[0] if len(lines) == 1 else None


def _judge(
    report: dict[str, Any], source: str
) -> tuple[list[ScriptIssue], list[ScriptIssue], dict[str, Any]]:
    found = _Findings(source)
    calls = [c for c in report.get("tool_calls", []) if isinstance(c, dict)]
    error = report.get("error")
    if calls:
        found.errors.append(_tool_call_issue(calls))
    elif isinstance(error, dict):
        found.errors.append(_thrown_issue(error, source))
    if found.errors:
        return found.errors, found.warnings, {}
    workflow = report.get("workflow")
    if not isinstance(workflow, dict) or workflow.get("type") not in ("object", "function"):
        found.error("workflow-missing", _missing_workflow(workflow))
        return found.errors, found.warnings, {}
    if workflow.get("type") == "function":
        found.error("workflow-missing", _missing_workflow(workflow))
        return found.errors, found.warnings, {}
    topics = _entries(found, workflow.get("topics"), "topics", optional=True)
    producers = _entries(found, workflow.get("producers"), "producers", optional=True)
    consumers = _entries(found, workflow.get("consumers"), "consumers", optional=True)
    if not producers and not consumers and not found.errors:
        message = (
            "workflow has no producers and no consumers: add at least one, either under"
            ' `workflow.producers` (e.g. `poll: { schedule: { interval: "5m" }, handler:'
            " async (state) => { … } }`) or under `workflow.consumers` (e.g. `handle: {"
            ' subscribe: ["topic.name"], prepare: async (state) => { … } }`)'
        )
        found.error("workflow-empty", message)
    config_producers = {
        name: _producer(found, name, entry) for name, entry in (producers or {}).items()
    }
    config_consumers = {
        name: _consumer(found, name, entry) for name, entry in (consumers or {}).items()
    }
    found.locate("")
    declared = list(topics or {})
    for name, consumer in config_consumers.items():
        found.locate(name)
        for topic in consumer["subscribe"]:
            if topic not in declared:
                message = (
                    f"{_path('consumers', name)} subscribes to {_quoted(topic)}, which"
                    f" `workflow.topics` does not declare: add `{_quoted(topic)}: {{}}` to"
                    " topics (or fix the topic name)"
                )
                found.warnings.append(ScriptIssue("topic-undeclared", message, found.line))
    config = {"topics": declared, "producers": config_producers, "consumers": config_consumers}
    return found.errors, found.warnings, config


def _tool_call_issue(calls: list[dict[str, Any]]) -> ScriptIssue:
    line = _line(calls[0])  # where the first call was made (its own stack, not the script's)
    where = f" (line {line})" if line is not None else ""
    shown = ", ".join(dict.fromkeys(_text(call, "path") for call in calls))
    message = (
        f"{TOOL_CALL_MESSAGE}: the script calls {shown} at the top level{where}; call tools"
        " only inside producer handlers and consumer prepare/mutate/next functions (a name"
        " the script never defines counts as a tool here)"
    )
    return ScriptIssue("tool-call", message, line)


def _thrown_issue(error: dict[str, Any], source: str) -> ScriptIssue:
    name, text = _text(error, "name"), _text(error, "message")
    text = text[:_SHOWN_ERROR] + ("…" if len(text) > _SHOWN_ERROR else "")
    line = _line(error)
    label = f"{name}: {text}" if name else text or "an exception"
    if name == "SyntaxError":
        where = f" at line {line}" if line is not None else ""
        count = source.count("\n") + 1
        if line is not None and line > count:  # found in the harness's line after the script
            line = count
            where = f" at its end (line {line}): something opened is never closed"
        hint = ""
        written = source.split("\n")[line - 1].lstrip() if line is not None else ""
        if _MODULE_SYNTAX.match(written):
            hint = (
                "; a workflow script is a plain script, not a module: declare"
                " `const workflow = { … };` with no import or export"
            )
        message = f"the script does not parse{where}: {label}{hint}"
        return ScriptIssue("syntax-error", message, line)
    if name == "InternalError" and text == "out of memory":
        return ScriptIssue("memory", _memory_message(), line)
    where = f" at line {line}" if line is not None else ""
    if name == "ReferenceError" and text.endswith(ABSENT_MESSAGE):
        name_used = text[: -len(ABSENT_MESSAGE)]
        at = f" (line {line})" if line is not None else ""
        message = f"`{name_used}`{at}{ABSENT_MESSAGE}"
        return ScriptIssue("no-system-access", message, line)
    message = (
        f"the script throws while loading{where}: {label}; code at the top level runs when"
        " the script is loaded, so it must not fail"
    )
    return ScriptIssue("script-error", message, line)


def _text(error: dict[str, Any], key: str) -> str:
    value = error.get(key)
    return value if isinstance(value, str) else ""


def _line(error: dict[str, Any]) -> int | None:
    stack = error.get("stack")
    match = _LINE.search(stack) if isinstance(stack, str) else None
    return int(match.group(1)) if match else None


def _missing_workflow(workflow: Any) -> str:
    kind = workflow.get("type") if isinstance(workflow, dict) else None
    if kind in (None, "undefined"):
        return (
            "the script defines no `workflow` object: declare it at the top level, e.g."
            " `const workflow = { topics: { … }, producers: { … }, consumers: { … } };`"
        )
    return (
        f"`workflow` is {_article(str(kind))}, not an object: make it an object literal,"
        " `const workflow = { topics: { … }, producers: { … }, consumers: { … } };`"
    )


def _entries(found: _Findings, section: Any, key: str, *, optional: bool) -> dict[str, Any] | None:
    """A section's entries by name; None when the section is absent (an error otherwise)."""
    kind = section.get("type") if isinstance(section, dict) else None
    if kind in (None, "undefined") and optional:
        return None
    if kind == "object" and isinstance(section.get("entries"), dict):
        return dict(section["entries"])
    if kind == "threw":
        found.error("script-error", f"reading `workflow.{key}` throws: {_threw(section)}")
        return None
    message = (
        f"`workflow.{key}` must be an object keyed by name (it is {_article(str(kind))}),"
        f" e.g. `{key}: {{ name: {{ … }} }}`"
    )
    found.error("section-not-object", message)
    return None


def _producer(found: _Findings, name: str, entry: Any) -> dict[str, Any]:
    found.locate(name)
    path = _path("producers", name)
    kind = entry.get("type") if isinstance(entry, dict) else None
    if kind != "object":
        found.error(
            "producer-not-object", f"{path} must be an object (it is {_article(str(kind))})"
        )
        return {"schedule": {}}
    handler = _kind(entry.get("handler"))
    if handler != "function":
        message = (
            f"{path}.handler must be a function (it is {_shown_kind(handler)}): add"
            " `handler: async (state) => { … }`"
        )
        found.error("producer-handler", message)
    schedule = entry.get("schedule")
    interval, cron = _string_field(schedule, "interval"), _string_field(schedule, "cron")
    extracted: dict[str, str] = {}
    if interval:
        extracted["interval"] = interval
    if cron:
        extracted["cron"] = cron
    if not extracted:
        given = _kind(schedule)
        detail = (
            f"its schedule is {_shown_kind(given)}"
            if given != "object"
            else "neither is a non-empty string"
        )
        message = (
            f"{path}.schedule needs interval or cron ({detail}): e.g."
            ' `schedule: { interval: "5m" }` or `schedule: { cron: "*/5 * * * *" }`'
        )
        found.error("producer-schedule", message)
    return {"schedule": extracted}


def _consumer(found: _Findings, name: str, entry: Any) -> dict[str, Any]:
    found.locate(name)
    path = _path("consumers", name)
    kind = entry.get("type") if isinstance(entry, dict) else None
    if kind != "object":
        found.error(
            "consumer-not-object", f"{path} must be an object (it is {_article(str(kind))})"
        )
        return {"subscribe": [], "hasMutate": False, "hasNext": False}
    subscribe = entry.get("subscribe")
    topics: list[str] = []
    items = subscribe.get("items") if isinstance(subscribe, dict) else None
    if _kind(subscribe) != "array" or not isinstance(items, list) or not items:
        shown = "an empty array" if _kind(subscribe) == "array" else _shown_kind(_kind(subscribe))
        message = (
            f"{path}.subscribe must be a non-empty array of topic names (it is {shown}):"
            ' e.g. `subscribe: ["email.received"]`'
        )
        found.error("consumer-subscribe", message)
    else:
        for index, item in enumerate(items):
            if _kind(item) == "string" and isinstance(item.get("value"), str) and item["value"]:
                topics.append(item["value"])
            else:
                message = (
                    f"{path}.subscribe[{index}] must be a topic name, a non-empty string"
                    f" (it is {_shown_kind(_kind(item))})"
                )
                found.error("consumer-subscribe", message)
    prepare = _kind(entry.get("prepare"))
    if prepare != "function":
        message = (
            f"{path}.prepare must be a function (it is {_shown_kind(prepare)}): add"
            " `prepare: async (state) => { … }`"
        )
        found.error("consumer-prepare", message)
    for optional in ("mutate", "next"):
        given = _kind(entry.get(optional))
        if given not in ("undefined", "function"):
            message = (
                f"{path}.{optional} is optional, but when present it must be a function (it"
                f" is {_shown_kind(given)}): remove it or make it `async (…) => {{ … }}`"
            )
            found.error(f"consumer-{optional}", message)
    return {
        "subscribe": topics,
        "hasMutate": _kind(entry.get("mutate")) == "function",
        "hasNext": _kind(entry.get("next")) == "function",
    }


def _kind(described: Any) -> str:
    kind = described.get("type") if isinstance(described, dict) else None
    return kind if isinstance(kind, str) else "undefined"


def _string_field(schedule: Any, key: str) -> str:
    if _kind(schedule) != "object" or not isinstance(schedule, dict):
        return ""
    value = schedule.get(key)
    text = value.get("value") if isinstance(value, dict) else None
    return text if _kind(value) == "string" and isinstance(text, str) and text.strip() else ""


def _threw(section: dict[str, Any]) -> str:
    error = section.get("error")
    if not isinstance(error, dict):
        return "an exception"
    name, text = error.get("name") or "", error.get("message") or ""
    return f"{name}: {text}" if name else str(text) or "an exception"


def _shown_kind(kind: str) -> str:
    if kind == "undefined":
        return "missing"
    if kind == "threw":
        return "a getter that throws"
    return _article(kind)


def _article(kind: str) -> str:
    if kind in ("undefined", "None"):
        return "undefined"
    if kind == "null":
        return "null"
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _path(section: str, name: str) -> str:
    if _IDENTIFIER.match(name):
        return f"workflow.{section}.{name}"
    return f"workflow.{section}[{_quoted(name)}]"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:_SHOWN_ERROR]
    return ""
