"""Script validation in the zero-tool sandbox: the rules, the extracted config, the limits,
and a script that tries to pass while invalid (by forging the harness's record, replacing
the built-ins it reads with, or reaching for files and modules)."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import wasmtime
from hypothesis import given, settings
from hypothesis import strategies as st

from groundskeeper.sandbox import preview1, quickjs
from groundskeeper.sandbox import script_validation as sv
from groundskeeper.sandbox.script_validation import (
    MAX_SCRIPT_BYTES,
    TOOL_CALL_MESSAGE,
    ScriptFileError,
    ScriptValidation,
    validate_script,
    validate_script_file,
)

VALID = """\
const workflow = {
  topics: {
    "email.received": {},
    "row.created": {},
  },
  producers: {
    pollEmail: {
      schedule: { interval: "5m" },
      handler: async (state) => {
        const emails = await Gmail.api({ method: "users.messages.list" });
        for (const email of emails.messages || []) await Topics.publish("email.received", email);
      },
    },
    nightly: {
      schedule: { cron: "0 3 * * *" },
      handler: async () => Sheets.clear("Scratch"),
    },
  },
  consumers: {
    processEmail: {
      subscribe: ["email.received"],
      prepare: async (state) => ({ rows: [] }),
      mutate: async (prepared) => Sheets.append(prepared.rows),
    },
    audit: {
      subscribe: ["email.received", "row.created"],
      prepare: async () => ({}),
      next: async (prepared, result) => Topics.publish("row.created", result),
    },
  },
};
"""


def codes(verdict: ScriptValidation) -> list[str]:
    return [issue.code for issue in verdict.errors]


def only_error(source: str) -> sv.ScriptIssue:
    verdict = validate_script(source)
    assert not verdict.ok
    assert verdict.config is None
    assert len(verdict.errors) == 1, verdict.errors
    return verdict.errors[0]


# --- the six rules, each from a script that breaks exactly it --------------------------------


def test_no_workflow_object() -> None:
    issue = only_error("const flow = { producers: {} };\n")
    assert issue.code == "workflow-missing"
    assert issue.message == (
        "the script defines no `workflow` object: declare it at the top level, e.g."
        " `const workflow = { topics: { … }, producers: { … }, consumers: { … } };`"
    )


def test_workflow_that_is_not_an_object() -> None:
    issue = only_error('const workflow = "producers";\n')
    assert issue.code == "workflow-missing"
    assert issue.message.startswith("`workflow` is a string, not an object:")


def test_no_producer_and_no_consumer() -> None:
    issue = only_error('const workflow = { topics: { "a": {} } };\n')
    assert issue.code == "workflow-empty"
    assert issue.message.startswith(
        "workflow has no producers and no consumers: add at least one, either under"
        " `workflow.producers`"
    )


def test_producer_without_handler() -> None:
    issue = only_error(
        'const workflow = { producers: { poll: { schedule: { interval: "5m" } } } };\n'
    )
    assert issue.code == "producer-handler"
    assert issue.message == (
        "workflow.producers.poll.handler must be a function (it is missing): add"
        " `handler: async (state) => { … }`"
    )


def test_producer_without_interval_or_cron() -> None:
    issue = only_error(
        "const workflow = { producers: { poll: { schedule: { every: 5 }, handler() {} } } };\n"
    )
    assert issue.code == "producer-schedule"
    assert issue.message == (
        "workflow.producers.poll.schedule needs interval or cron (neither is a non-empty"
        ' string): e.g. `schedule: { interval: "5m" }` or `schedule: { cron: "*/5 * * * *" }`'
    )


def test_producer_without_schedule_says_it_is_missing() -> None:
    issue = only_error("const workflow = { producers: { poll: { handler() {} } } };\n")
    assert issue.code == "producer-schedule"
    assert "(its schedule is missing)" in issue.message


def test_consumer_with_empty_subscribe() -> None:
    issue = only_error(
        "const workflow = { consumers: { sync: { subscribe: [], prepare: async () => 1 } } };\n"
    )
    assert issue.code == "consumer-subscribe"
    assert issue.message == (
        "workflow.consumers.sync.subscribe must be a non-empty array of topic names (it is"
        ' an empty array): e.g. `subscribe: ["email.received"]`'
    )


def test_consumer_without_prepare() -> None:
    issue = only_error(
        'const workflow = { topics: { a: {} }, consumers: { sync: { subscribe: ["a"] } } };\n'
    )
    assert issue.code == "consumer-prepare"
    assert issue.message == (
        "workflow.consumers.sync.prepare must be a function (it is missing): add"
        " `prepare: async (state) => { … }`"
    )


@pytest.mark.parametrize("name", ["mutate", "next"])
def test_optional_handlers_must_be_functions_when_present(name: str) -> None:
    source = (
        "const workflow = { topics: { a: {} }, consumers: { sync: {"
        f' subscribe: ["a"], prepare() {{}}, {name}: "later" }} }} }};\n'
    )
    issue = only_error(source)
    assert issue.code == f"consumer-{name}"
    assert issue.message.startswith(
        f"workflow.consumers.sync.{name} is optional, but when present it must be a function"
        " (it is a string)"
    )


def test_every_broken_rule_is_reported_at_once() -> None:
    source = (
        "const workflow = {\n"
        "  producers: { p: { schedule: {} } },\n"
        '  consumers: { "odd name": { subscribe: "a" } },\n'
        "};\n"
    )
    verdict = validate_script(source)
    assert codes(verdict) == [
        "producer-handler",
        "producer-schedule",
        "consumer-subscribe",
        "consumer-prepare",
    ]
    assert verdict.errors[2].message.startswith(
        'workflow.consumers["odd name"].subscribe must be a non-empty array of topic names'
        " (it is a string)"
    )
    assert [issue.line for issue in verdict.errors] == [2, 2, 3, 3]  # where each is written


def test_an_entry_written_as_a_key_on_several_lines_gets_no_line() -> None:
    source = "const p = { p: 1 };\nconst workflow = { producers: { p: { handler() {} } } };\n"
    issue = only_error(source)
    assert issue.code == "producer-schedule"
    assert issue.line is None


# --- a valid script and its config ---------------------------------------------------------


def test_valid_script_config_field_by_field() -> None:
    verdict = validate_script(VALID)
    assert verdict.ok
    assert verdict.errors == ()
    assert verdict.warnings == ()
    config = verdict.config
    assert config is not None
    assert config["topics"] == ["email.received", "row.created"]
    assert list(config["producers"]) == ["pollEmail", "nightly"]
    assert config["producers"]["pollEmail"] == {"schedule": {"interval": "5m"}}
    assert config["producers"]["nightly"] == {"schedule": {"cron": "0 3 * * *"}}
    assert list(config["consumers"]) == ["processEmail", "audit"]
    assert config["consumers"]["processEmail"] == {
        "subscribe": ["email.received"],
        "hasMutate": True,
        "hasNext": False,
    }
    assert config["consumers"]["audit"] == {
        "subscribe": ["email.received", "row.created"],
        "hasMutate": False,
        "hasNext": True,
    }


def test_workflow_may_be_a_var_or_a_global_property() -> None:
    for declaration in ("var workflow = ", "globalThis.workflow = ", "let workflow = "):
        source = declaration + VALID.split("=", 1)[1]
        assert validate_script(source).ok, declaration


def test_undeclared_topic_is_a_warning_not_an_error() -> None:
    source = 'const workflow = { consumers: { c: { subscribe: ["new.topic"], prepare() {} } } };'
    verdict = validate_script(source)
    assert verdict.ok
    assert verdict.config == {
        "topics": [],
        "producers": {},
        "consumers": {"c": {"subscribe": ["new.topic"], "hasMutate": False, "hasNext": False}},
    }
    assert [w.code for w in verdict.warnings] == ["topic-undeclared"]
    assert verdict.warnings[0].message.startswith(
        'workflow.consumers.c subscribes to "new.topic", which `workflow.topics` does not declare'
    )


# --- tools, modules and files: absent ----------------------------------------------------------


def test_tool_call_at_top_level_fails_naming_the_call_and_line() -> None:
    source = '// set up\nconst seed = Sheets.read("Config!A1");\n' + VALID
    issue = only_error(source)
    assert issue.code == "tool-call"
    assert issue.line == 2
    assert issue.message.startswith(
        f"{TOOL_CALL_MESSAGE}: the script calls Sheets.read at the top level (line 2)"
    )


def test_tool_call_swallowed_by_a_catch_still_fails() -> None:
    source = "try { Topics.publish('x', {}); } catch (e) {}\n" + VALID
    issue = only_error(source)
    assert issue.code == "tool-call"
    assert "Topics.publish" in issue.message


def test_any_unknown_global_is_a_tool_namespace_that_throws() -> None:
    issue = only_error("SomeCrm.contacts.list.all();\n" + VALID)
    assert issue.code == "tool-call"
    assert "SomeCrm.contacts.list.all" in issue.message


def test_a_getter_calling_a_tool_while_read_is_caught() -> None:
    source = VALID.replace("topics: {", "get topics() { return Gmail.labels(); },\n  x: {", 1)
    verdict = validate_script(source)
    assert codes(verdict) == ["tool-call"]
    assert "Gmail.labels" in verdict.errors[0].message


@pytest.mark.parametrize(
    "use",
    ['const fs = require("fs");', 'std.open("/etc/passwd", "r");', "os.exec(['ls']);",
     'fs.readFileSync("x");', "process.env.HOME;", "typeof std;"],
)  # fmt: skip
def test_require_fs_std_os_are_not_defined(use: str) -> None:
    issue = only_error(use + "\n" + VALID)
    name = use.split("(")[0].split(".")[0].split()[-1].rstrip(";")
    assert issue.code == "no-system-access"
    assert issue.line == 1
    assert issue.message.startswith(f"`{name}` (line 1) is not defined: workflow scripts run")


def test_a_tool_called_after_an_await_at_the_top_level_is_caught() -> None:
    source = (
        "(async () => {\n  await 0;\n  const seen = await Promise.resolve(1);\n"
        "  await Gmail.send({ to: 'a' });\n})();\n" + VALID
    )
    issue = only_error(source)
    assert issue.code == "tool-call"
    assert issue.line == 4
    assert "Gmail.send" in issue.message


def test_a_tool_called_in_a_promise_callback_is_caught() -> None:
    issue = only_error("Promise.resolve().then(() => Sheets.clear('A'));\n" + VALID)
    assert issue.code == "tool-call"
    assert "Sheets.clear" in issue.message


def test_a_promise_loop_without_end_does_not_hold_validation() -> None:
    verdict = validate_script("(function again() { Promise.resolve().then(again); })();\n" + VALID)
    assert verdict.ok


def test_std_imported_at_run_time_can_print_nothing_that_passes() -> None:
    printed = validate_script("import('qjs:std').then((std) => std.puts('x\\n'));\n" + VALID)
    assert codes(printed) == ["stray-output"]
    assert printed.errors[0].message.startswith("the script printed to stdout while loading")
    exited = validate_script("import('qjs:std').then((std) => std.exit(0));\n" + VALID)
    assert codes(exited) == ["exit"]
    # the code after the import does run, and finds no file: the sandbox has no directory
    files = validate_script(
        "import('qjs:std').then((std) => {\n"
        "  const opened = [std.open('/etc/passwd', 'r'), std.open('flow.js', 'r')];\n"
        "  if (opened[0] === null && opened[1] === null) Topics.noFiles();\n"
        "  else Topics.aFileOpened();\n"
        "});\n" + VALID
    )
    assert codes(files) == ["tool-call"]
    assert "Topics.noFiles at the top level (line 3)" in files.errors[0].message


def test_console_is_silent_and_not_a_tool() -> None:
    assert validate_script('console.log("loading");\n' + VALID).ok


def test_the_sandbox_has_no_directory_at_all() -> None:
    class Sink:
        def room(self) -> int:
            return 0

        def write(self, data: bytes) -> None:
            raise AssertionError("nothing is written")

    process = preview1.Process(
        argv=["qjs"], env=[], stdin=b"", stdout=Sink(), stderr=Sink(),
        root_fd=preview1.NO_FILES, guest_root="", read_only=True, deadline=time.monotonic() + 1,
    )  # fmt: skip
    memory = memoryview(bytearray(64))
    assert sorted(process.fds) == [0, 1, 2]
    assert process.fd_prestat_get(memory, 3, 0) == preview1.BADF
    with pytest.raises(preview1.WasiError) as refused:
        process.path_open(memory, 3, 0, 0, 1, 0, 0, 0, 0, 8)
    assert refused.value.code == preview1.BADF


# --- a script that wants to pass while invalid -------------------------------------------------

INVALID_TAIL = '\nconst workflow = { topics: { a: {} }, consumers: { c: { subscribe: ["a"] } } };\n'


@pytest.mark.parametrize(
    "attack",
    [
        # replace the built-ins a harness would describe the workflow with
        "Object.keys = () => []; JSON.stringify = () => '{}'; Array.isArray = () => false;",
        "Object.prototype.toJSON = function () { return {ok: true}; };",
        "Object.defineProperty(Array.prototype, '0', { set() {}, get() { return 'x'; } });",
        "Object.defineProperty(Object.prototype, 'ok', { get() { return true; }, set() {} });",
        # print a record of its own
        'console.log(\'{"error":null,"workflow":{"type":"undefined"},"tool_calls":[]}\');',
        "import('qjs:std').then((std) => std.out.puts('forged\\n'));",
        # reach the harness's functions through call sites
        "Error.prepareStackTrace = (e, sites) => { globalThis.sites = sites; return ''; };"
        " try { Gmail.x(); } catch (e) { e.stack; }",
    ],
)
def test_tampering_cannot_make_an_invalid_script_pass(attack: str) -> None:
    verdict = validate_script(attack + INVALID_TAIL)
    assert not verdict.ok
    assert verdict.config is None
    assert codes(verdict) in (["consumer-prepare"], ["tool-call"], ["stray-output"])


def test_prepare_stack_trace_is_locked() -> None:
    source = '"use strict";\nError.prepareStackTrace = () => "mine";\n' + VALID.replace(
        "const", "var"
    )
    issue = only_error(source)
    assert issue.code == "script-error"
    assert issue.line == 2
    assert "TypeError" in issue.message


def test_a_record_on_stdout_is_accepted_only_whole_and_alone() -> None:
    nonce = "__N__"
    record = '{"error":null,"workflow":{"type":"undefined"},"tool_calls":[]}'
    assert sv._report(f"{nonce}{record}\n", nonce) is not None
    assert sv._report(f"{nonce}{record}\n{nonce}{record}\n", nonce) is None
    assert sv._report(f"junk\n{nonce}{record}\n", nonce) is None
    assert sv._report(f"{record}\n", nonce) is None
    assert sv._report(f"{nonce}{record}", nonce) is None
    assert sv._report(f"{nonce}[1]\n", nonce) is None


def test_a_getter_that_throws_is_a_script_error() -> None:
    source = "const workflow = { get producers() { throw new Error('nope'); } };"
    issue = only_error(source)
    assert issue.code == "script-error"
    assert issue.message == "reading `workflow.producers` throws: Error: nope"


def test_uncaught_exception_names_its_line() -> None:
    issue = only_error("const a = 1;\nconst b = a.missing.deeper;\n" + VALID)
    assert issue.code == "script-error"
    assert issue.line == 2
    assert issue.message.startswith("the script throws while loading at line 2: TypeError:")


def test_syntax_error_names_its_line() -> None:
    issue = only_error("const workflow = {\n  producers: {\n    p: { schedule { } },\n  },\n};\n")
    assert issue.code == "syntax-error"
    assert issue.line == 3
    assert issue.message.startswith("the script does not parse at line 3: SyntaxError:")


@pytest.mark.parametrize(
    "first", ["export const workflow = {};", 'import { api } from "gmail";\nconst workflow = {};']
)
def test_module_syntax_is_a_syntax_error_that_says_what_to_write(first: str) -> None:
    issue = only_error(first + "\n")
    assert issue.code == "syntax-error"
    assert issue.line == 1
    assert issue.message.endswith(
        "; a workflow script is a plain script, not a module: declare"
        " `const workflow = { … };` with no import or export"
    )


def test_syntax_error_at_the_end_names_the_last_line() -> None:
    issue = only_error("const workflow = {\n  producers: {\n")
    assert issue.code == "syntax-error"
    assert issue.line == 3
    assert "at its end (line 3): something opened is never closed" in issue.message


# --- limits --------------------------------------------------------------------------------------


def test_endless_loop_is_ended_by_the_deadline() -> None:
    started = time.monotonic()
    verdict = validate_script("while (true) {}\n" + VALID, timeout=0.3)
    assert time.monotonic() - started < 3
    assert codes(verdict) == ["deadline"]
    assert verdict.errors[0].message.startswith(
        "the script did not finish loading within 0.3 s (deadline)"
    )


def test_one_script_s_deadline_stops_no_other_running_at_once() -> None:
    # QuickJS compiled first: a compile excuses every running script's deadline while the
    # loop's fuel still burns, so on a cold cache the loop could end by fuel instead
    assert validate_script(VALID).ok
    sources = ["while (true) {}\n" + VALID, VALID, INVALID_TAIL, VALID]
    with ThreadPoolExecutor(max_workers=4) as pool:
        timeouts = [0.5, None, None, None]
        verdicts = list(pool.map(lambda s, t: validate_script(s, timeout=t), sources, timeouts))
    assert [codes(v) for v in verdicts] == [["deadline"], [], ["consumer-prepare"], []]
    assert verdicts[1].config == verdicts[3].config is not None


def test_endless_allocation_is_ended_by_the_memory_limit() -> None:
    source = "const hoard = [];\nwhile (true) hoard.push(new Array(4096).fill(hoard.length));\n"
    verdict = validate_script(source + VALID)
    assert codes(verdict) == ["memory"]
    assert verdict.errors[0].message.startswith(
        "the script used more than 32 MiB of memory while loading (memory limit)"
    )


def test_a_wasm_memory_limit_below_the_heap_limit_still_names_memory() -> None:
    program = "const b = []; while (true) b.push(new ArrayBuffer(1 << 20));"
    run = quickjs.run_program(program, memory=8 * 1024 * 1024, heap=256 * 1024 * 1024)
    assert not run.completed
    assert "out of memory" in run.stderr or run.fault == "memory"


def test_endless_recursion_is_ended_by_the_stack_limit() -> None:
    issue = only_error("function down(n) { return down(n + 1) + 1; }\ndown(0);\n" + VALID)
    assert issue.code == "stack"


def test_huge_script_is_refused_before_running() -> None:
    source = VALID + "//" + "x" * MAX_SCRIPT_BYTES
    verdict = validate_script(source)
    assert codes(verdict) == ["script-too-large"]
    assert verdict.duration_ms == 0.0
    assert verdict.errors[0].message.startswith(
        f"the script is {len(source.encode())} bytes; the limit is {MAX_SCRIPT_BYTES} bytes"
    )


def test_huge_file_is_read_no_further_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.js"
    path.write_text(VALID + "//" + "x" * (4 * MAX_SCRIPT_BYTES))
    verdict = validate_script_file(path)
    assert codes(verdict) == ["script-too-large"]


def test_unreadable_files_raise_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptFileError, match="no such file"):
        validate_script_file(tmp_path / "absent.js")
    with pytest.raises(ScriptFileError, match="is a directory"):
        validate_script_file(tmp_path)
    (tmp_path / "bad.js").write_bytes(b"const a = 1;\nconst b = '\xff';\n")
    with pytest.raises(ScriptFileError, match=r"bad\.js:2: not valid UTF-8"):
        validate_script_file(tmp_path / "bad.js")
    fifo = tmp_path / "pipe.js"
    os.mkfifo(fifo)
    with pytest.raises(ScriptFileError, match="not a regular file"):
        validate_script_file(fifo)


# --- the compiled module is cached like box.wasm's ---------------------------------------------


def test_a_module_left_in_the_current_directory_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "qjs-wasi-reactor" / "qjs-wasi-reactor.wasm"
    planted.parent.mkdir()
    planted.write_bytes(wasmtime.wat2wasm('(module (memory (export "memory") 1))'))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend("")  # what `python -m` puts first
    found = quickjs.find_module()
    assert found != planted and tmp_path not in found.parents
    assert found.name == "qjs-wasi-reactor.wasm" and "site-packages" in found.parts


class Compiled(Exception):
    """Raised in place of compiling QuickJS: proof that a cache entry was not used."""


def test_compiled_module_is_cached_and_a_tampered_entry_is_not_loaded(
    groundskeeper_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled: list[int] = []
    deserialized: list[int] = []
    compile_module, deserialize = wasmtime.Module.__init__, wasmtime.Module.deserialize

    def counting_compile(self: wasmtime.Module, engine: wasmtime.Engine, wasm: bytes) -> None:
        compiled.append(len(wasm))
        compile_module(self, engine, wasm)

    def counting_deserialize(
        cls: type[wasmtime.Module], engine: wasmtime.Engine, encoded: bytes
    ) -> wasmtime.Module:
        deserialized.append(len(encoded))
        return deserialize(engine, encoded)

    monkeypatch.setattr(wasmtime.Module, "__init__", counting_compile)
    monkeypatch.setattr(wasmtime.Module, "deserialize", classmethod(counting_deserialize))

    def new_process() -> None:  # no engine and no compiled module held in memory
        monkeypatch.setattr(quickjs, "_pool", [])
        monkeypatch.setattr(quickjs, "_serialized", [])

    new_process()  # engines of earlier tests used other homes
    assert validate_script(VALID).ok
    assert (len(compiled), len(deserialized)) == (1, 0)
    (entry,) = sorted((groundskeeper_home / "cache").glob("qjs-*.cwasm"))
    stored = entry.read_bytes()

    new_process()
    assert validate_script(VALID).ok
    assert (len(compiled), len(deserialized)) == (1, 1)  # from disk, not compiled
    assert entry.read_bytes() == stored

    entry.unlink()  # a second engine in the same process needs neither disk nor compiler
    monkeypatch.setattr(quickjs, "_pool", [])
    assert validate_script(VALID).ok
    assert (len(compiled), len(deserialized)) == (1, 2)
    entry.write_bytes(stored)

    def refuse_to_compile(self: wasmtime.Module, engine: wasmtime.Engine, wasm: bytes) -> None:
        raise Compiled

    entry.write_bytes(stored[:32] + bytes(64) + stored[96:])  # altered native code
    monkeypatch.setattr(wasmtime.Module, "__init__", refuse_to_compile)
    new_process()
    with pytest.raises(Compiled):  # the altered entry is never loaded: it would be compiled
        validate_script(VALID)
    assert len(deserialized) == 2


# --- any text at all ------------------------------------------------------------------------


@settings(max_examples=40)
@given(st.text(alphabet=st.characters(codec=None, blacklist_categories=())))
def test_any_text_gets_a_verdict_never_an_exception(text: str) -> None:
    verdict = validate_script(text)
    assert verdict.ok == (not verdict.errors)
    assert (verdict.config is not None) == verdict.ok


@settings(max_examples=20)
@given(st.text(min_size=1, max_size=20))
def test_any_valid_script_embedding_any_string_keeps_it_as_data(text: str) -> None:
    quoted = json.dumps(text)  # a JavaScript string literal holding any text, NULs included
    verdict = validate_script(f"const note = {quoted};\n" + VALID)
    assert verdict.ok, verdict.errors


# --- adversary-28 F5: a script that tells the validator apart ---------------------------------

BROKEN = "{ consumers: { toSheet: { subscribe: ['email.received'] } } }"


@pytest.mark.parametrize(
    "probe",
    [
        "(() => { try { return ValidationProbeX.anything !== undefined; } catch (e) {"
        " return false; } })()",
        "typeof ProbeNamespace === 'function'",
    ],
)
def test_a_script_that_exports_another_workflow_where_a_name_is_undefined_is_refused(
    probe: str,
) -> None:
    source = VALID.replace("const workflow = {", "const real = {", 1)
    source += f"const workflow = {probe} ? real : {BROKEN};\n"
    issue = only_error(source)
    assert issue.code == "workflow-depends-on-sandbox"
    assert issue.message.startswith("the script reads `"), issue.message
    assert issue.message.endswith("read tool namespaces inside handlers only")


def test_a_namespace_read_as_it_loads_that_changes_nothing_is_valid() -> None:
    # `Topics` read at the top level only for a handler to use: the same workflow either way
    source = "const T = (() => { try { return Topics; } catch (e) { return null; } })();\n"
    verdict = validate_script(source + VALID)
    assert verdict.ok, verdict.errors
    assert verdict.config is not None and sorted(verdict.config["producers"]) == [
        "nightly",
        "pollEmail",
    ]


def test_a_script_whose_namespaces_stay_in_its_handlers_runs_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs: list[tuple[str, ...]] = []
    real = sv._evaluate

    def evaluate(source: str, absent: tuple[str, ...], timeout: float) -> object:
        runs.append(tuple(absent))
        return real(source, absent, timeout)

    monkeypatch.setattr(sv, "_evaluate", evaluate)
    verdict = validate_script(VALID)
    assert verdict.ok and verdict.config is not None
    assert len(runs) == 1
    validate_script("const T = typeof Probe;\n" + VALID)  # read as it loads: a second run
    assert len(runs) == 3 and runs[2][-1] == "Probe"
