"""Contracts: each type's pass, failure, malformed input, huge input, missing file and a symlink
out of the workdir; the registry; and the runner sealing every verdict."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.acceptance.attempt_record import AttemptRecord
from groundskeeper.acceptance.contracts import (
    READ_LIMIT,
    REGISTRY,
    ContractContext,
    ContractType,
    ContractVerdict,
    judge_contracts,
    markdown_headings,
    register,
)
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.contract_syntax import (
    Contract,
    ContractProblem,
    parse_contract,
    task_contracts,
)
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan, parse_plan
from groundskeeper.plan.properties import noop_option
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.supervisor.runner import MemoryRecorder, Runner, RunOptions

HEAD = "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"


def contract(text: str) -> Contract:
    parsed = parse_contract(text)
    assert isinstance(parsed, Contract), parsed
    return parsed


def judge(tmp_path: Path, text: str, record: AttemptRecord | None = None) -> ContractVerdict:
    plan = tmp_path / "plan.org"
    if not plan.exists():
        plan.write_text(HEAD)
    context = ContractContext(Toolbox(tmp_path, plan), record or AttemptRecord(()))
    (verdict,) = judge_contracts([contract(text)], context)
    return verdict


# -- reading contract lines ---------------------------------------------------------------------


def test_contract_lines_are_kept_apart_and_soft_is_a_leading_word() -> None:
    text = (
        HEAD + "* TODO t\n  :PROPERTIES:\n  :contract: non-empty a.txt\n"
        '  :contract+: soft markdown-sections notes.md "Known issues" Usage\n'
        "  :contract+: ran 'grep -q *'\n  :END:\n"
    )
    plan = parse_plan(text)
    contracts, problems = task_contracts(plan, plan.tasks()[0])
    assert problems == []
    assert [(c.kind, c.args, c.soft, c.line) for c in contracts] == [
        ("non-empty", ("a.txt",), False, 4),
        ("markdown-sections", ("notes.md", "Known issues", "Usage"), True, 5),
        ("ran", ("grep -q *",), False, 6),
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("nonempty a", "unknown contract type `nonempty`"),
        ("non-empty", "`non-empty` takes 1 argument, not 0"),
        ("non-empty a b", "`non-empty` takes 1 argument, not 2"),
        ("format xml a.xml", "unknown format `xml`; the formats are json, yaml, toml, csv"),
        ("json-schema s.json", "`json-schema` takes 2 arguments, not 1"),
        ("markdown-sections notes.md", "`markdown-sections` takes at least 2 arguments, not 1"),
        ("non-empty ../out.txt", "must be a path inside the workdir"),
        ("soft", "empty contract"),
        ("ran 'grep", "cannot be split"),
    ],
)
def test_malformed_contract_lines_are_named(text: str, said: str) -> None:
    parsed = parse_contract(text, 7)
    assert isinstance(parsed, ContractProblem)
    assert said in parsed.message
    assert parsed.line == 7


def test_lint_reports_contract_syntax_and_missing_schemas(tmp_path: Path) -> None:
    (tmp_path / "present.json").write_text("{}")
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :done-when: grep -q x a.txt\n"
        "  :contract: format xml a.xml\n  :contract+: json-schema absent.json out.json\n"
        "  :contract+: json-schema present.json out.json\n"
        "  :evidence: ok:bool quote:output-of n:float\n  :END:\n"
    )
    found = {(d.code, d.line, d.level) for d in validate(load_plan(plan))}
    assert ("T015", 5, "error") in found
    assert ("T016", 6, "error") in found
    assert not any(code == "T016" and line == 7 for code, line, _ in found)
    messages = [d.message for d in validate(load_plan(plan)) if d.code == "T017"]
    assert len(messages) == 2
    assert any("output-of needs the command it quotes" in m for m in messages)
    assert any("unknown evidence type `float`" in m for m in messages)


def test_a_new_type_is_one_register_call(tmp_path: Path) -> None:
    def judge_hello(c: Contract, ctx: ContractContext) -> str:
        if ctx.read_text(c.args[0]).strip() != "hello":
            from groundskeeper.acceptance.contracts import ContractFailure

            raise ContractFailure("C099", "not hello", {"seen": 1})
        return "hello"

    register(ContractType("says-hello", "says-hello FILE", 1, 1, judge_hello))
    try:
        (tmp_path / "h.txt").write_text("bye\n")
        verdict = judge(tmp_path, "says-hello h.txt")
        assert (verdict.code, verdict.message, dict(verdict.detail)) == (
            "C099",
            "not hello",
            {"seen": 1},
        )
        assert verdict.reason == "C099: says-hello h.txt: not hello"
    finally:
        del REGISTRY["says-hello"]


# -- the file contracts -------------------------------------------------------------------------


def test_non_empty(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text("  \n\n")
    (tmp_path / "full.txt").write_text("x\n")
    assert judge(tmp_path, "non-empty empty.txt").code == "C003"
    assert judge(tmp_path, "non-empty blank.txt").code == "C003"
    assert judge(tmp_path, "non-empty missing.txt").code == "C001"
    assert judge(tmp_path, "non-empty full.txt").ok


def test_a_huge_file_fails_its_contract(tmp_path: Path) -> None:
    with open(tmp_path / "big.json", "wb") as handle:
        handle.truncate(READ_LIMIT + 1)
    verdict = judge(tmp_path, "format json big.json")
    assert verdict.code == "C002"
    assert f"larger than {READ_LIMIT} bytes" in verdict.message


def test_a_symlink_out_of_the_workdir_is_not_followed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.json").write_text('{"ok": true}')
    os.symlink(tmp_path / "secret.json", work / "out.json")
    os.symlink("../secret.json", work / "rel.json")
    for name in ("out.json", "rel.json"):
        verdict = judge(work, f"format json {name}")
        assert verdict.code == "C001"
        assert "outside the working directory" in verdict.message


def test_a_fifo_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    verdict = judge(tmp_path, "non-empty pipe.json")
    assert verdict.code == "C001"
    assert "not a regular file" in verdict.message


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        ("json", '{"a": [1, 2]}', '{"a": [1, 2}'),
        ("yaml", "a:\n  - 1\n", "a: [1\n"),
        ("toml", 'a = "x"\n', "a = \n"),
        ("csv", "name,n\nx,1\ny,2\n", "name,n\nx,1,3\n"),
    ],
)
def test_format(tmp_path: Path, kind: str, good: str, bad: str) -> None:
    (tmp_path / "good").write_text(good)
    (tmp_path / "bad").write_text(bad)
    assert judge(tmp_path, f"format {kind} good").ok
    verdict = judge(tmp_path, f"format {kind} bad")
    assert verdict.code == "C004"
    assert f"`bad` is not valid {kind}" in verdict.message


def test_format_refuses_json_constants_and_non_utf8(tmp_path: Path) -> None:
    (tmp_path / "nan.json").write_text('{"a": NaN}')
    (tmp_path / "latin.json").write_bytes(b'{"a": "\xe9"}')
    assert judge(tmp_path, "format json nan.json").code == "C004"
    latin = judge(tmp_path, "format json latin.json")
    assert latin.code == "C004" and "not UTF-8" in latin.message


SCHEMA = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}


def test_json_schema(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "good.json").write_text('{"ok": true}')
    (tmp_path / "bad.json").write_text('{"ok": "yes"}')
    (tmp_path / "broken.json").write_text('{"ok": ')
    assert judge(tmp_path, "json-schema schema.json good.json").ok
    bad = judge(tmp_path, "json-schema schema.json bad.json")
    assert bad.code == "C005"
    assert (
        bad.message
        == "`bad.json` does not match `schema.json` at ok: 'yes' is not of type 'boolean'"
    )
    assert judge(tmp_path, "json-schema schema.json broken.json").code == "C004"
    assert judge(tmp_path, "json-schema schema.json missing.json").code == "C001"


def test_json_schema_enforces_format_with_the_library_checker(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "home": {"type": "string", "format": "uri"},
        "mail": {"type": "string", "format": "email"},
    }}  # fmt: skip
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    good = {"when": "2026-11-27T15:00:00Z", "day": "2026-11-27",
            "home": "https://example.com/a", "mail": "a@example.com"}  # fmt: skip
    (tmp_path / "good.json").write_text(json.dumps(good))
    assert judge(tmp_path, "json-schema schema.json good.json").ok
    for key, wrong in (("when", "yesterday"), ("day", "2026-13-45"), ("home", "not a uri"),
                       ("mail", "nobody")):  # fmt: skip
        (tmp_path / "bad.json").write_text(json.dumps({**good, key: wrong}))
        bad = judge(tmp_path, "json-schema schema.json bad.json")
        assert bad.code == "C005", (key, bad.message)
        assert f"at {key}: {wrong!r} is not a" in bad.message


def test_a_format_no_checker_knows_fails_closed(tmp_path: Path) -> None:
    schema = {"properties": {"a": {"format": "colour-name"}}, "examples": [{"format": "x"}]}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    (tmp_path / "doc.json").write_text('{"a": "red"}')
    verdict = judge(tmp_path, "json-schema schema.json doc.json")
    assert verdict.code == "C006"
    assert "names a format that cannot be checked: colour-name (known: " in verdict.message


def test_json_schema_that_is_missing_or_invalid_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text('{"ok": true}')
    (tmp_path / "invalid.json").write_text('{"type": 12}')
    (tmp_path / "remote.json").write_text('{"$ref": "https://example.com/s.json"}')
    (tmp_path / "nowhere.json").write_text('{"$ref": "#/definitions/none"}')
    assert judge(tmp_path, "json-schema absent.json good.json").code == "C006"
    invalid = judge(tmp_path, "json-schema invalid.json good.json")
    assert invalid.code == "C006" and "not a valid schema" in invalid.message
    remote = judge(tmp_path, "json-schema remote.json good.json")  # nothing is fetched
    assert remote.code == "C006" and "which is not fetched" in remote.message
    nowhere = judge(tmp_path, "json-schema nowhere.json good.json")
    assert nowhere.code == "C006" and "cannot be resolved" in nowhere.message


def test_markdown_sections(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text(
        "# Title\n\nUsage\n-----\n\n```\n## Hidden in code\n```\n\n## Known issues ##\n"
    )
    assert markdown_headings((tmp_path / "notes.md").read_text()) == [
        "Title", "Usage", "Known issues"
    ]  # fmt: skip
    assert judge(tmp_path, 'markdown-sections notes.md Usage "known issues"').ok
    missing = judge(tmp_path, 'markdown-sections notes.md Usage "Hidden in code" Install')
    assert missing.code == "C007"
    assert missing.message == (
        '`notes.md` has no section "Hidden in code", "Install"'
        ' (its headings: "Title", "Usage", "Known issues")'
    )
    assert dict(missing.detail) == {"missing": ["Hidden in code", "Install"]}
    (tmp_path / "bin.md").write_bytes(b"# \xff\n")
    assert judge(tmp_path, "markdown-sections bin.md X").code == "C004"


@pytest.mark.parametrize(
    "hidden",
    [
        "<!--\n# Install\n# Usage\n-->\n",  # an HTML comment renders nothing
        "<details>\n# Install\n# Usage\n</details>\n",  # an HTML block's lines are HTML
        "    # Install\n    # Usage\n",  # an indented code block
        "~~~\n# Install\n# Usage\n~~~\n",
        "> # Install\n> # Usage\n",  # a quote's headings are no section of the document
        "- # Install\n- # Usage\n",
        "<pre>\n\n# Install\n\n# Usage\n\n</pre>\n",  # raw text until its end tag
    ],
)
def test_markdown_headings_that_do_not_render_as_sections_do_not_count(
    tmp_path: Path, hidden: str
) -> None:
    """adversary-19 F6: the sections are read as a CommonMark renderer reads them."""
    (tmp_path / "README.md").write_text("TODO tool.py\n\n" + hidden)
    found = judge(tmp_path, "markdown-sections README.md Install Usage")
    assert found.code == "C007", found
    assert dict(found.detail) == {"missing": ["Install", "Usage"]}


@pytest.mark.parametrize(
    "heading",
    ["## 1. Install", "## Install:", "## 2) Install", "## **Install**", "## `Install`",
     "## A. Install", "## 1.2 Install", "Install\n=======", "## INSTALL"],
)  # fmt: skip
def test_a_numbered_or_punctuated_heading_names_its_section(tmp_path: Path, heading: str) -> None:
    """adversary-19 F8: "## 1. Install" and "## Install:" are the Install section."""
    (tmp_path / "INSTALL.md").write_text(f"# Guide\n\n{heading}\n\npip install tool\n")
    found = judge(tmp_path, "markdown-sections INSTALL.md Install")
    assert found.ok, found


@pytest.mark.parametrize("heading", ["## Installation", "## Install later", "## Uninstall"])
def test_another_word_is_another_section(tmp_path: Path, heading: str) -> None:
    (tmp_path / "INSTALL.md").write_text(f"# Guide\n\n{heading}\n")
    assert judge(tmp_path, "markdown-sections INSTALL.md Install").code == "C007"


def test_a_judge_never_reads_the_control_directory(tmp_path: Path) -> None:
    from groundskeeper.record.control import ControlDir
    from groundskeeper.sandbox import fence as fences

    plan = tmp_path / "plan.org"
    plan.write_text(HEAD)
    control = ControlDir.for_plan(plan).ensure()
    (control.path / "x.json").write_text("{}")
    with fences.enforced(fences.for_plan(plan, control.root)):
        verdict = judge(tmp_path, "non-empty .groundskeeper/plan.org/x.json")
    assert verdict.code == "C001"


# -- the record contracts, from a run ------------------------------------------------------------


def run(
    tmp_path: Path, contracts: list[str], turns: str, files: dict[str, str] | None = None
) -> tuple[Any, MemoryRecorder, Path]:
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        os.utime(tmp_path / name, (1_700_000_000, 1_700_000_000))  # made well before the run
    lines = "".join(f"  :contract{'+' if i else ''}: {c}\n" for i, c in enumerate(contracts))
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + f"* TODO t\n  :PROPERTIES:\n  :ID: t\n{lines}  :END:\n")
    model = ScriptedModel.from_yaml("workers:\n  t:\n" + turns)
    recorder = MemoryRecorder()
    options = RunOptions(max_parallel=1)
    with Telemetry.for_plan(plan) as telemetry:
        report = Runner(
            load_plan(plan), model=model, recorder=recorder, options=options, telemetry=telemetry
        ).run()
    (task,) = report.tasks
    return task, recorder, plan


SAY_DONE = "    - say: DONE\n"


def test_changed_by_write_file_passes(tmp_path: Path) -> None:
    turns = "    - {tool: write_file, input: {path: out/r.txt, content: new}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, ["changed out/r.txt"], turns)
    assert task.state == "DONE", task.reason
    (sealed,) = recorder.of("contract")
    assert sealed["verdicts"][0]["ok"] is True
    write = next(c for c in recorder.of("tool-call") if c["tool"] == "write_file")
    assert write["path"] == "out/r.txt" and write["changed"] == ["out/r.txt"]


def test_changed_by_sh_is_seen_in_the_snapshot(tmp_path: Path) -> None:
    turns = "    - {tool: sh, input: {cmd: 'echo hi > r.txt'}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, ["changed r.txt"], turns)
    assert task.state == "DONE", task.reason
    sh = next(c for c in recorder.of("tool-call") if c["tool"] == "sh")
    assert sh["changed"] == ["r.txt"]
    assert sh["cmd"] == "echo hi > r.txt" and sh["exit_status"] == 0


def test_changed_fails_when_the_record_shows_no_change(tmp_path: Path) -> None:
    """The file is there and differs from nothing the record knows: a stale artifact."""
    turns = "    - {tool: sh, input: {cmd: 'cat r.txt'}}\n" + SAY_DONE
    task, _recorder, _ = run(tmp_path, ["changed r.txt"], turns, {"r.txt": "old\n"})
    assert task.state == "FAILED"
    assert (task.reason or "").startswith("C008: changed r.txt: the record shows no tool call")


def test_changed_fails_for_a_touch_without_new_content(tmp_path: Path) -> None:
    """`changed` asks for content, not timestamps: a `touch` opened the file (the sandbox's
    journal says so), but what it holds is what it held when the task first started."""
    turns = "    - {tool: sh, input: {cmd: 'touch r.txt'}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, ["changed r.txt"], turns, {"r.txt": "old\n"})
    assert task.state == "FAILED"
    call = recorder.of("tool-call")[0]
    assert (call["changed"], call["wrote"]) == ([], ["r.txt"])
    first = recorder.of("contract")[0]["verdicts"][0]
    assert first["code"] == "C008"
    assert first["message"] == (
        "r.txt: touched, but the content is the same as when the task first started"
    )


def test_changed_fails_for_a_file_moved_away_and_back(tmp_path: Path) -> None:
    turns = (
        "    - {tool: sh, input: {cmd: 'mv r.txt t.txt'}}\n"
        "    - {tool: sh, input: {cmd: 'mv t.txt r.txt'}}\n" + SAY_DONE
    )
    task, recorder, _ = run(tmp_path, ["changed r.txt"], turns, {"r.txt": "old\n"})
    assert task.state == "FAILED"
    first = recorder.of("contract")[0]["verdicts"][0]
    assert first["code"] == "C008" and "content is the same" in first["message"]


def test_changed_by_renaming_a_stale_file_into_place_is_a_change(tmp_path: Path) -> None:
    """A rename into the path is a change this attempt made (the record shows it) — and a
    different content than before; `changed` asks exactly that, nothing about quality."""
    turns = "    - {tool: sh, input: {cmd: 'mv stale.txt r.txt'}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, ["changed r.txt"], turns, {"stale.txt": "s\n"})
    assert task.state == "DONE", task.reason
    sh = recorder.of("tool-call")[0]
    assert sh["changed"] == ["r.txt"]


def test_changed_by_an_earlier_attempt_does_not_count(tmp_path: Path) -> None:
    turns = (
        "    - {tool: write_file, input: {path: r.txt, content: a}}\n"
        + SAY_DONE
        + "    - {tool: write_file, input: {path: other.txt, content: b}}\n"
        + SAY_DONE
    )
    task, recorder, _ = run(tmp_path, ["changed r.txt", "non-empty other.txt"], turns)
    first, second = recorder.of("contract")
    assert [v["ok"] for v in first["verdicts"]] == [True, False]
    assert [v["ok"] for v in second["verdicts"]] == [False, True]
    assert (task.state, task.attempts) == ("FAILED", 2)
    assert (task.reason or "").startswith("C008: changed r.txt: the record shows no tool call")


def test_changed_fails_closed_when_a_call_has_no_change_list(tmp_path: Path) -> None:
    """A record whose `sh` call carries no list (too long to seal, or not watched): unknown."""
    bodies = ({"tool": "sh", "cmd": "x", "exit_status": 0, "changed": None},)
    (tmp_path / "r.txt").write_text("new")
    verdict = judge(tmp_path, "changed r.txt", AttemptRecord(bodies))
    assert verdict.code == "C009"
    assert "what tool call(s) 1 changed is unknown" in verdict.message


def test_only_the_watched_paths_are_looked_at(tmp_path: Path) -> None:
    turns = "    - {tool: sh, input: {cmd: 'echo a > other.txt; echo b > r.txt'}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, ["changed r.txt"], turns)
    assert task.state == "DONE", task.reason
    assert recorder.of("tool-call")[0]["changed"] == ["r.txt"]


def test_a_task_without_changed_contracts_seals_no_change_list(tmp_path: Path) -> None:
    turns = "    - {tool: sh, input: {cmd: 'echo b > r.txt'}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, ["non-empty r.txt"], turns)
    assert task.state == "DONE", task.reason
    assert recorder.of("tool-call")[0]["changed"] is None


def test_ran_needs_a_matching_command_that_exited_zero(tmp_path: Path) -> None:
    files = {"a.txt": "ok\n"}
    honest = "    - {tool: sh, input: {cmd: 'grep -q ok a.txt && echo fine'}}\n" + SAY_DONE
    task, _, _ = run(tmp_path, ["ran 'grep -q ok *'"], honest, files)
    assert task.state == "DONE", task.reason


@pytest.mark.parametrize(
    ("cmd", "why"),
    [
        ("grep -q nope a.txt", "exited 1"),
        ("grep -q nope a.txt || true", "no command matching"),  # `||` hides the status
        ("grep -q nope a.txt; true", "no command matching"),
        ("! grep -q nope a.txt", "no command matching"),
        ("echo grep -q ok a.txt", "no command matching"),
        ("X=ok; grep -q $X a.txt", "no command matching"),
    ],
)
def test_ran_is_not_fooled(tmp_path: Path, cmd: str, why: str) -> None:
    turns = f"    - {{tool: sh, input: {{cmd: {json.dumps(cmd)}}}}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, ["ran 'grep -q *'"], turns, {"a.txt": "ok\n"})
    assert task.state == "FAILED"
    first = recorder.of("contract")[0]["verdicts"][0]
    assert first["code"] == "C010"
    assert first["message"].startswith("no command matching `grep -q *` ran and exited 0")
    assert why in first["message"]


@pytest.mark.parametrize(
    "cmd",
    [
        "cd decoy && grep -q ok a.txt",  # the decoy's a.txt, not the work's
        "printf 'ok\\n' > a.txt && grep -q ok a.txt",  # it wrote what the command then reads
        "cp decoy/a.txt a.txt && grep -q ok a.txt",
        "export GREP_COLOR=1 && grep -q ok a.txt",
        "grep -q ok < decoy/a.txt",  # its input redirected from a file of the worker's choice
    ],
)
def test_ran_refuses_a_chain_that_changes_what_the_command_runs_on(
    tmp_path: Path, cmd: str
) -> None:
    turns = f"    - {{tool: sh, input: {{cmd: {json.dumps(cmd)}}}}}\n" + SAY_DONE
    files = {"a.txt": "not yet\n", "decoy/a.txt": "ok\n"}
    task, recorder, _ = run(tmp_path, ["ran 'grep -q ok*'"], turns, files)
    assert task.state == "FAILED"
    first = recorder.of("contract")[0]["verdicts"][0]
    assert first["code"] == "C010"
    assert "it does not count" in first["message"]


@pytest.mark.parametrize(
    ("pattern", "cmd", "option"),
    [
        ("python3 *", "python3 --version", "--version"),
        ("python3 -m json.tool *", "python3 -m json.tool --help", "--help"),
        ("python3 -m pytest *tests", "python3 -m pytest --co -q tests", "--co"),
        ("python3 *", "python3 -V", "-V"),
    ],
)
def test_ran_does_not_count_a_run_that_does_nothing(
    tmp_path: Path, pattern: str, cmd: str, option: str
) -> None:
    """adversary-19 F11: `pytest --co` collects and runs no test, yet exits 0."""
    turns = f"    - {{tool: sh, input: {{cmd: {json.dumps(cmd)}}}}}\n" + SAY_DONE
    task, recorder, _ = run(tmp_path, [f"ran {json.dumps(pattern)}"], turns, {"tests/t.py": ""})
    assert task.state == "FAILED"
    first = recorder.of("contract")[0]["verdicts"][0]
    assert first["code"] == "C010"
    assert f"`{cmd}` (its option `{option}` makes it do none of its work)" in first["message"]


@pytest.mark.parametrize(
    ("cmd", "option"),
    [
        # adversary-21 F2: pytest's own alias of --collect-only, a doubled -V, an abbreviation,
        # a -V among short flags, and options that change its configuration
        ("python3 -m pytest --collectonly tests", "--collectonly"),
        ("python3 -m pytest -VV tests", "-VV"),
        ("python3 -m pytest --collect tests", "--collect"),
        ("python3 -m pytest -qV tests", "-qV"),
        ("python3 -m pytest -o addopts=--co tests", "-o"),
        ("python3 -m pytest -c other.ini tests", "-c"),
        ("python3 -m pytest -p evilplug tests", "-p"),
        ("python3 -m pytest --version --version", "--version"),
        ("pytest --co", "--co"),
        ("python3 -m pytest tests --fixtures", "--fixtures"),
        # what pytest runs tests under counts
        ("python3 -m pytest -q tests", None),
        ("python3 -m pytest -x -q --tb=short tests", None),
        ("python3 -m pytest -vv -rA tests/test_calc.py::test_add", None),
        ("python3 -m pytest -k 'add and not slow' tests", None),
        ("python3 -m pytest -q --maxfail 1 tests", None),
        ("python3 -X dev -m pytest -q tests", None),
        ("python3 -m pytest -qx tests", None),
        ("python3 -m pytest --tb short -W error -ra tests", None),
        ("python3 -m pytest -m 'not slow' -q", None),
        ("python3 -m pytest -p no:cacheprovider -q tests", None),
        ("python3 -m pytest -q -- -weird-name.py", None),
        ("pytest -q", None),
    ],
)
def test_a_pytest_run_counts_only_under_options_it_runs_tests_with(
    cmd: str, option: str | None
) -> None:
    assert noop_option("python3 -m pytest*", cmd) == option
    assert noop_option("pytest*", cmd) == option


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\naddopts = --collect-only\n"),
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '--co'\n"),
        ("conftest.py", "def pytest_configure(config):\n    config.option.collectonly = True\n"),
    ],
)
def test_ran_of_pytest_keeps_its_configuration_from_the_worker(
    tmp_path: Path, name: str, text: str
) -> None:
    """adversary-21 F2, by another spelling: a configuration file the worker writes makes
    `python3 -m pytest tests` collect and run nothing, and exit 0. A `ran` naming pytest keeps
    pytest's configuration from the workers, as a check that runs pytest does."""
    write = f"    - {{tool: write_file, input: {{path: {name}, content: {json.dumps(text)}}}}}\n"
    turns = write + "    - {tool: sh, input: {cmd: 'python3 -m pytest -q tests'}}\n" + SAY_DONE
    files = {"tests/test_t.py": "def test_t():\n    assert False\n"}
    task, _, _ = run(tmp_path, ['ran "python3 -m pytest*"'], turns, files)
    assert task.state == "FAILED"
    assert not (tmp_path / name).exists()


def test_ran_of_pytest_counts_an_honest_suite_run(tmp_path: Path) -> None:
    turns = "    - {tool: sh, input: {cmd: 'python3 -m pytest -q tests'}}\n" + SAY_DONE
    files = {"tests/test_t.py": "def test_t():\n    assert True\n"}
    task, _, _ = run(tmp_path, ['ran "python3 -m pytest*"'], turns, files)
    assert task.state == "DONE", task.reason


def test_a_pytest_option_the_pattern_spells_counts() -> None:
    assert noop_option("python3 -m pytest --co *", "python3 -m pytest --co tests") is None
    assert noop_option("python3 -m pytest -o *", "python3 -m pytest -o x=1 tests") is None


def test_ran_counts_a_do_nothing_option_the_pattern_spells(tmp_path: Path) -> None:
    turns = "    - {tool: sh, input: {cmd: 'python3 --version'}}\n" + SAY_DONE
    task, _, _ = run(tmp_path, ["ran 'python3 --version'"], turns)
    assert task.state == "DONE", task.reason


@pytest.mark.parametrize(
    "cmd", ["grep -q ok a.txt", "test -s a.txt && grep -q ok a.txt", "grep -q ok a.txt 2>/dev/null"]
)
def test_ran_counts_a_chain_of_commands_that_only_read(tmp_path: Path, cmd: str) -> None:
    turns = f"    - {{tool: sh, input: {{cmd: {json.dumps(cmd)}}}}}\n" + SAY_DONE
    task, _, _ = run(tmp_path, ["ran 'grep -q ok*'"], turns, {"a.txt": "ok\n"})
    assert task.state == "DONE", task.reason


def test_soft_failure_is_a_warning_sealed_and_in_telemetry(tmp_path: Path) -> None:
    turns = "    - {tool: write_file, input: {path: a.txt, content: x}}\n" + SAY_DONE
    task, recorder, plan = run(tmp_path, ["non-empty a.txt", "soft non-empty notes.md"], turns)
    assert task.state == "DONE", task.reason
    # the attempt's verdicts; the final sweep keeps the DONE (nothing acted after it)
    (attempt,) = recorder.of("contract")
    assert attempt["attempt"] == 1
    assert [(v["contract"], v["ok"], v["code"], v["soft"]) for v in attempt["verdicts"]] == [
        ("non-empty a.txt", True, None, False),
        ("soft non-empty notes.md", False, "C001", True),
    ]
    assert [u["phase"] for u in recorder.of("untouched")] == ["sweep"]
    with Telemetry.for_plan(plan) as telemetry:
        rows = [(r["kind"], r["spec"], r["soft"], r["ok"], r["code"])
                for r in telemetry.db["contract_events"].rows]  # fmt: skip
    assert rows == [
        ("contract", "non-empty a.txt", 0, 1, None),
        ("contract", "soft non-empty notes.md", 1, 0, "C001"),
    ]


def test_soft_failure_appears_in_the_report_diagnostics(tmp_path: Path) -> None:
    (tmp_path / "plan.org").write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :ID: t\n  :contract: soft non-empty notes.md\n  :END:\n"
    )
    model = ScriptedModel.from_yaml("workers:\n  t:\n    - say: DONE\n")
    report = Runner(load_plan(tmp_path / "plan.org"), model=model).run()
    warnings = [d for d in report.diagnostics if d.code == "C001"]
    assert len(warnings) == 1 and warnings[0].level == "warning"
    assert (
        warnings[0].message
        == "soft contract failed: C001: soft non-empty notes.md: `notes.md` does not exist"
    )
    assert report.tasks[0].state == "DONE"


def test_hard_failure_is_fed_back_and_a_second_attempt_can_meet_it(tmp_path: Path) -> None:
    turns = (
        "    - say: DONE\n    - {tool: write_file, input: {path: a.txt, content: x}}\n" + SAY_DONE
    )
    task, recorder, _ = run(tmp_path, ["non-empty a.txt"], turns)
    assert (task.state, task.attempts) == ("DONE", 2)
    # the two attempts; the final sweep keeps the DONE, as nothing acted after its verdict
    assert [s["verdicts"][0]["ok"] for s in recorder.of("contract")] == [False, True]
    assert [u["phase"] for u in recorder.of("untouched")] == ["sweep"]


def test_the_schema_is_a_protected_input(tmp_path: Path) -> None:
    files = {"schema.json": json.dumps(SCHEMA)}
    turns = (
        "    - {tool: write_file, input: {path: schema.json, content: '{}'}}\n"
        "    - {tool: sh, input: {cmd: 'echo {} > schema.json'}}\n"
        "    - {tool: write_file, input: {path: out.json, content: '{\"ok\": 1}'}}\n" + SAY_DONE
    )
    task, recorder, _ = run(tmp_path, ["json-schema schema.json out.json"], turns, files)
    calls = recorder.of("tool-call")
    assert calls[0]["status"] == "refused"
    assert calls[1]["exit_status"] != 0
    assert json.loads((tmp_path / "schema.json").read_text()) == SCHEMA
    assert task.state == "FAILED"
    assert (task.reason or "").startswith("C005: json-schema schema.json out.json:")


FILE_CONTRACTS = [
    "non-empty {f}",
    "format json {f}",
    "format csv {f}",
    "json-schema schema.json {f}",
    "markdown-sections {f} Usage",
]


@pytest.mark.parametrize("line", FILE_CONTRACTS)
def test_every_file_contract_fails_closed(tmp_path: Path, line: str) -> None:
    """Missing, huge, a symlink out, a folder: each fails with its code, whatever the type."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "outside.json").write_text('{"ok": true}')
    os.symlink(tmp_path / "outside.json", work / "link.json")
    (work / "folder").mkdir()
    with open(work / "huge", "wb") as handle:
        handle.truncate(READ_LIMIT + 1)
    codes = {name: judge(work, line.format(f=name)).code for name in
             ("absent", "huge", "link.json", "folder")}  # fmt: skip
    assert codes == {"absent": "C001", "huge": "C002", "link.json": "C001", "folder": "C001"}


def test_a_failed_contract_is_not_promoted_by_its_check_alone(tmp_path: Path) -> None:
    """The record names a claim's failure `claim:C…`: `check --write` cannot promote it."""
    from groundskeeper.record.backing import read_record

    turns = "    - {tool: write_file, input: {path: a.txt, content: x}}\n" + SAY_DONE
    plan = tmp_path / "plan.org"
    (tmp_path / "a.txt").write_text("")
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :ID: t\n  :max-attempts: 1\n"
        "  :contract: changed b.txt\n  :done-when: grep -q x a.txt\n  :END:\n"
    )
    recorder = MemoryRecorder()
    model = ScriptedModel.from_yaml("workers:\n  t:\n" + turns)
    (task,) = Runner(load_plan(plan), model=model, recorder=recorder).run().tasks
    assert task.state == "FAILED"
    record = read_record(recorder.history())
    assert record.tasks["t"].failure == "claim:C008"
    assert not record.promotable("t")


def test_an_unbacked_done_with_contracts_is_worked_on_again(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    (tmp_path / "a.txt").write_text("x\n")
    plan.write_text(
        HEAD + "* DONE t\n  :PROPERTIES:\n  :ID: t\n  :contract: changed a.txt\n"
        "  :done-when: grep -q x a.txt\n  :END:\n"
    )
    model = ScriptedModel.from_yaml("workers:\n  t:\n    - say: DONE\n")
    recorder = MemoryRecorder()
    (task,) = Runner(load_plan(plan), model=model, recorder=recorder).run().tasks
    assert task.state == "FAILED"  # the check passes, but no attempt changed a.txt
    assert recorder.of("contract")[0]["verdicts"][0]["code"] == "C008"


def test_a_verdict_always_fits_a_ledger_line(tmp_path: Path) -> None:
    """A schema error quotes the offending value, and a judge's detail may hold floats and
    non-ASCII names: the sealed verdict is bounded and canonical-JSON safe."""
    from groundskeeper.record.ledger import canonical_json

    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "big.json").write_text(json.dumps({"ok": "y" * 200_000}))
    verdict = judge(tmp_path, "json-schema schema.json big.json")
    assert verdict.code == "C005"
    assert len(verdict.message) < 1100 and verdict.message.endswith("more characters)")
    odd = ContractVerdict(contract("non-empty a"), None, "ok", {"intervalle": 0.5, "thème": [1]})
    sealed = odd.to_json()
    assert json.loads(sealed["detail_json"]) == {"intervalle": 0.5, "thème": [1]}
    assert len(canonical_json(sealed)) < 2000


@pytest.mark.parametrize("line", ["format json deep.json", "json-schema schema.json deep.json",
                                  "format yaml deep.json"])  # fmt: skip
def test_a_hostile_document_fails_its_contract_and_never_the_run(tmp_path: Path, line: str) -> None:
    """Nesting deep enough to exhaust a recursive parser is a failed contract, not a crash."""
    (tmp_path / "schema.json").write_text(json.dumps({"items": {"$ref": "#"}}))
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    verdict = judge(tmp_path, line)
    assert verdict.code in ("C004", "C005"), verdict
    assert not verdict.ok


def test_a_judge_that_breaks_fails_closed(tmp_path: Path) -> None:
    def broken(c: Contract, ctx: ContractContext) -> str:
        raise KeyError("bug")

    register(ContractType("breaks", "breaks", 0, 0, broken))
    try:
        verdict = judge(tmp_path, "breaks")
        assert (verdict.code, verdict.message) == (
            "C090", "the contract could not be judged: KeyError: 'bug'"
        )  # fmt: skip
    finally:
        del REGISTRY["breaks"]


def test_lint_warns_of_patterns_that_let_evidence_be_self_made(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :done-when: grep -q x a.txt\n"
        "  :contract: ran '*'\n  :contract+: ran 'grep -q *'\n"
        "  :evidence: 'q:output-of:c*' 'r:output-of:yamllint *'\n  :END:\n"
    )
    found = [(d.code, d.line, d.level, d.message) for d in validate(load_plan(plan))
             if d.code == "T018"]  # fmt: skip
    assert [(code, line, level) for code, line, level, _ in found] == [
        ("T018", 5, "warning"), ("T018", 7, "warning"), ("T018", 7, "warning")
    ]  # fmt: skip
    assert "lets `echo` count" in found[0][3]
    assert "`q:output-of:c*`: the pattern lets `cat` print the quote" in found[1][3]
    assert found[2][3] == (
        ":evidence: `r:output-of:yamllint *`: the pattern ends in a bare `*`, so the worker"
        " chooses what `yamllint` reads (a file it wrote could print the quote); bind it to the"
        " file it must read: `output-of:yamllint FILE`"
    )


@pytest.mark.parametrize(
    "command", ["grep", "sort", "uniq", "cut", "tr", "awk", "jq", "tee", "nl", "rev", "paste",
                "xargs", "find", "python3", "date", "ls", "base64"],
)  # fmt: skip
def test_every_print_back_command_the_sandbox_has_is_named(tmp_path: Path, command: str) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :done-when: grep -q x a.txt\n"
        f"  :evidence: 'q:output-of:{command} *'\n  :END:\n"
    )
    (found,) = [d.message for d in validate(load_plan(plan)) if d.code == "T018"]
    assert f"the pattern lets `{command}` print the quote" in found


def test_a_bare_star_names_the_artifact_to_bind(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :done-when: grep -q x a.txt\n"
        "  :contract: format json out/report.json\n"
        "  :evidence: 'v:output-of:jsonlint *' 'w:output-of:jsonlint out/report.json'\n  :END:\n"
    )
    (found,) = [d.message for d in validate(load_plan(plan)) if d.code == "T018"]
    assert found.endswith("bind it to the artifact `out/report.json`: "
                          "`output-of:jsonlint out/report.json`")  # fmt: skip
