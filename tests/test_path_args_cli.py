"""Path arguments read by the one matcher (`groundskeeper.path_patterns`, issue 28 item 1) at
the CLI: a contract's FILE, `:gate-files:` and `:judge-files:` name what `:protect:` and lint
would name — a directory covers what is under it, `**` crosses directories, a glob is a glob
and not a file of that name — and a plain path still names that very file. Each fake beside
its honest twin; each test fails with the literal reading these arguments had before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundskeeper.models.model import AssistantTurn, ModelRequest
from tests.test_cli_run import resume, setup, steps, task
from tests.test_gates import _cli, _resume, _states, _verified


def _script(task_id: str, *calls: str) -> str:
    return f"workers:\n  {task_id}:\n" + "".join(calls) + "    - say: DONE\n"


def _write(path: str, content: str) -> str:
    return (
        "    - {tool: write_file, input: {path: '" + path + "', content: " + json.dumps(content)
        + "}}\n"
    )  # fmt: skip


def _sh(cmd: str) -> str:
    return "    - {tool: sh, input: {cmd: '" + cmd.replace("'", "''") + "'}}\n"


def _row(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(r for r in doc["tasks"] if r["id"] == task_id)


SCHEMA = json.dumps(
    {"type": "object", "required": ["total"], "properties": {"total": {"type": "integer"}}}
)


# -- contract paths ----------------------------------------------------------------------------


def test_a_file_named_like_the_glob_does_not_stand_in_for_the_files_it_covers(
    tmp_path: Path,
) -> None:
    """The literal reading judged a file called `out/*.json`; the worker made one that
    matches the schema beside the real report, which does not."""
    (tmp_path / "schema.json").write_text(SCHEMA)
    plan, script = setup(
        tmp_path,
        task(
            "Report",
            "t",
            "test -s out/report.json",
            contract="json-schema schema.json out/*.json",
            max_attempts="1",
        ),
        _script(
            "t",
            _write("out/*.json", '{"total": 42}'),
            _write("out/report.json", '{"total": "many"}'),
        ),
    )
    result, doc = resume(plan, script)
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("C005: json-schema schema.json out/*.json: `out/report.json`")
    assert result.exit_code == 1


def test_every_file_a_glob_covers_is_judged_and_all_holding_is_done(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(SCHEMA)
    plan, script = setup(
        tmp_path,
        task(
            "Report",
            "t",
            "test -s out/a.json",
            contract="json-schema schema.json out/*.json",
            max_attempts="1",
        ),
        _script("t", _write("out/a.json", '{"total": 1}'), _write("out/b.json", '{"total": 2}')),
    )
    result, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")["reason"]
    sealed = steps(plan, "contract")[0]  # the attempt's (the final sweep judges them again)
    assert sealed["verdicts"][0]["message"] == (
        "`out/*.json`: all 2 files hold (out/a.json, out/b.json)"
    )
    assert result.exit_code == 0


@pytest.mark.parametrize("pattern", ["data", "data/", "data/**", "data/*"])
def test_a_directory_in_a_contract_covers_the_files_under_it(tmp_path: Path, pattern: str) -> None:
    """Read literally, a directory was `a folder, not a file` (C001): honest work refused."""
    plan, script = setup(
        tmp_path,
        task(
            "Data", "t", "test -s data/a.json", contract=f"format json {pattern}", max_attempts="1"
        ),
        _script("t", _write("data/a.json", "[1]"), _write("data/deep/b.json", '{"b": 2}')),
    )
    result, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")["reason"]
    assert result.exit_code == 0


def test_a_directory_in_a_contract_fails_on_any_file_under_it(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Notes", "t", "test -s notes/a.md", contract="non-empty notes/**", max_attempts="1"),
        _script("t", _write("notes/a.md", "# A\n"), _write("notes/later/b.md", " \n")),
    )
    result, doc = resume(plan, script)
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"] == "C003: non-empty notes/**: `notes/later/b.md` holds only whitespace"
    assert result.exit_code == 1


def test_a_plain_path_names_that_file_not_one_in_another_case_or_folder(tmp_path: Path) -> None:
    """The matcher folds case and matches a bare name at any depth; a plain path in a
    contract still names the file as spelled, so `readme.md` or `docs/README.md` does not
    stand in for a missing `README.md`."""
    plan, script = setup(
        tmp_path,
        task("Readme", "t", "test -s readme.md", contract="non-empty README.md", max_attempts="1"),
        _script("t", _write("readme.md", "# x\n"), _write("docs/README.md", "# y\n")),
    )
    _, doc = resume(plan, script)
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"] == "C001: non-empty README.md: `README.md` does not exist"


def test_changed_on_a_directory_holds_when_a_file_under_it_changed(tmp_path: Path) -> None:
    """Read literally, `changed src` asked for a change to the path `src` itself, which no
    tool call ever writes: honest work was refused (C008)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('old')\n")
    plan, script = setup(
        tmp_path,
        task("Fix", "t", "grep -q new src/app.py", contract="changed src", max_attempts="1"),
        _script("t", _sh("echo \"print('new')\" > src/app.py")),
    )
    result, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")["reason"]
    assert result.exit_code == 0


def test_changed_on_a_glob_is_no_change_when_every_file_is_as_it_first_was(
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('old')\n")
    plan, script = setup(
        tmp_path,
        task("Fix", "t", "grep -q old src/app.py", contract="changed src/*.py", max_attempts="1"),
        _script("t", _sh("touch src/app.py")),
    )
    _, doc = resume(plan, script)
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert "the content is the same as when the task first started" in row["reason"]


# -- :gate-files: --------------------------------------------------------------------------------

GATED = (
    "#+TITLE: gated\n"
    "* TODO Write the reports\n"
    "  :PROPERTIES:\n"
    "  :ID: reports\n"
    "  :gate: approval\n"
    "  :gate-files: {files}\n"
    "  :done-when: test -s reports/a.md\n"
    "  :END:\n"
    "  Write reports/a.md and reports/b.md.\n"
)
REPORTS = [
    {"tool": "write_file", "input": {"path": "reports/a.md", "content": "# a\n"}},
    {"tool": "write_file", "input": {"path": "reports/b.md", "content": "# b\n"}},
    {"tool": "write_file", "input": {"path": "notes.txt", "content": "scratch\n"}},
    {"say": "DONE"},
]


def _gated(tmp_path: Path, files: str) -> tuple[Path, list[str]]:
    script = tmp_path / "mission.yaml"
    script.write_text(yaml.safe_dump({"author": [GATED.format(files=files)],
                                      "workers": {"reports": REPORTS}}))  # fmt: skip
    work = tmp_path / "work"
    result = _cli("run", "reports", "--model", f"scripted:{script}", "--dir", str(work), "--json")
    assert result.exit_code == 3, result.output
    [gate] = json.loads(result.stdout)["waiting"]["gates"]
    return work, [f["path"] for f in gate["files"]]


def test_gate_files_naming_a_directory_bind_what_is_under_it(tmp_path: Path) -> None:
    """Read literally, the gate bound the path `reports/` (no file, hash null): a report
    rewritten after the person said yes went through as approved."""
    work, shown = _gated(tmp_path, "reports/")
    assert shown == ["reports/a.md", "reports/b.md"]
    assert _cli("approve", str(work), "--task", "reports", "--yes").exit_code == 0
    (work / "reports" / "b.md").write_text("# b\nrewritten after the approval\n")
    code, doc = _resume(work)
    assert code == 3 and doc is not None
    assert _states(doc)["reports"] == "WAITING"
    _verified(work)


def test_a_file_made_under_gate_files_after_the_approval_makes_it_stale(tmp_path: Path) -> None:
    """The person approved the files the pattern named then; one more there now is work
    nobody approved."""
    work, _shown = _gated(tmp_path, "reports/")
    assert _cli("approve", str(work), "--task", "reports", "--yes").exit_code == 0
    (work / "reports" / "c.md").write_text("# c, added after the approval\n")
    code, doc = _resume(work)
    assert code == 3 and doc is not None
    assert _states(doc)["reports"] == "WAITING"
    [gate] = doc["waiting"]["gates"]
    assert [f["path"] for f in gate["files"]] == ["reports/a.md", "reports/b.md", "reports/c.md"]
    _verified(work)


def test_gate_files_naming_a_glob_leave_other_files_free(tmp_path: Path) -> None:
    work, shown = _gated(tmp_path, "reports/*.md")
    assert shown == ["reports/a.md", "reports/b.md"]
    assert _cli("approve", str(work), "--task", "reports", "--yes").exit_code == 0
    (work / "notes.txt").write_text("scratch, edited\n")  # not what the person approved
    code, doc = _resume(work)
    assert code == 0 and doc is not None
    assert _states(doc) == {"reports": "DONE"}
    _verified(work)


# -- :judge-files: -------------------------------------------------------------------------------


class _Judge:
    name = "recording-judge"

    def __init__(self) -> None:
        self.shown: list[str] = []

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.shown.append(repr(request.messages))
        verdict = {"verdict": "pass", "reasons": ["every tier has its line"]}
        call = {"type": "tool_use", "id": "v1", "name": "verdict", "input": verdict}
        return AssistantTurn((call,), "tool_use")


def _judged(tmp_path: Path, files: str, *calls: str) -> tuple[Any, _Judge]:
    from groundskeeper.models import load_model
    from groundskeeper.plan.org import load_plan
    from groundskeeper.supervisor.runner import Runner, RunOptions

    plan, script = setup(
        tmp_path,
        task(
            "Summary",
            "t",
            "test -s out/summary.md",
            judge="one line per tier",
            judge_files=files,
            max_attempts="1",
        ),
        _script("t", *calls),
    )
    judge = _Judge()
    report = Runner(load_plan(plan), model=load_model(f"scripted:{script}"), judge_model=judge,
                    options=RunOptions(max_parallel=1)).run()  # fmt: skip
    return report, judge


def test_judge_files_naming_a_glob_that_covers_nothing_fail_closed(tmp_path: Path) -> None:
    """Read as a glob that matched nothing, the judge was asked about no named file at all."""
    report, judge = _judged(tmp_path, "out/*.md docs/*.md", _write("out/summary.md", "Hobby\n"))
    (row,) = report.tasks
    assert row.state == "FAILED"
    assert (row.reason or "").startswith("J014")
    assert "docs/*.md" in (row.reason or "")
    assert judge.shown == []


def test_judge_files_naming_a_directory_show_every_file_under_it(tmp_path: Path) -> None:
    report, judge = _judged(tmp_path, "out", _write("out/summary.md", "Hobby\n"),
                            _write("out/deep/tiers.md", "Pro\n"))  # fmt: skip
    (row,) = report.tasks
    assert row.state == "DONE", row.reason
    assert "out/deep/tiers.md" in judge.shown[0] and "out/summary.md" in judge.shown[0]
