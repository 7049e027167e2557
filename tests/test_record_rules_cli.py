"""Record-based rules at the CLI (issue 28, item 5), each fake beside its honest twin: a
`changed` contract is judged against what the path held when the task FIRST started (across
attempts and resumes), a gate without `:gate-files:` binds every file its worker changed by
any tool (`sh` writes included, a parallel sibling's never), and `ran` counts no command an
earlier member of its chain prepared (`cd decoy && …`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.test_cli_run import resume, setup, steps, task
from tests.test_gates import _cli, _resume, _states, _verified


def _sh(cmd: str) -> str:
    return "    - {tool: sh, input: {cmd: '" + cmd.replace("'", "''") + "'}}\n"


def _row(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(r for r in doc["tasks"] if r["id"] == task_id)


# -- `changed`: against the task's first start -------------------------------------------------

# run 1 (or attempt 1) drafts r.txt and fails its check; run 2 (or attempt 2) puts back what
# r.txt held before any work, and meets the check: against the attempt's own start that is a
# change, against the task's first start it is none
RESTORE = (
    "if test -f .seen; then echo stale > r.txt; echo done > notes.txt;"
    " else echo draft > r.txt; touch .seen; fi"
)
# the honest twin's second try really writes something new
REDO = (
    "if test -f .seen; then echo final > r.txt; echo done > notes.txt;"
    " else echo draft > r.txt; touch .seen; fi"
)


def _changed_plan(tmp_path: Path, cmd: str, attempts: str) -> tuple[Path, Path]:
    (tmp_path / "r.txt").write_text("stale\n")
    return setup(
        tmp_path,
        task(
            "Redo r", "t", "grep -q done notes.txt", contract="changed r.txt", max_attempts=attempts
        ),
        "workers:\n  t:\n" + _sh(cmd) + "    - say: DONE\n" + _sh(cmd) + "    - say: DONE\n",
    )


def test_changed_back_to_the_first_start_across_a_resume_is_no_change(tmp_path: Path) -> None:
    plan, script = _changed_plan(tmp_path, RESTORE, "1")
    _, first = resume(plan, script)
    assert _row(first, "t")["state"] == "FAILED"
    assert (tmp_path / "r.txt").read_text() == "draft\n"
    _, second = resume(plan, script)
    row = _row(second, "t")
    assert (tmp_path / "r.txt").read_text() == "stale\n"
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("C008: changed r.txt: r.txt: touched, but the content is")
    assert "when the task first started" in row["reason"]
    # the first start's hashes were sealed once and read back by the second run
    starts = [b for b in steps(plan, "task-start") if b["task_id"] == "t"]
    assert [b["watched"] for b in starts] == [
        [{"path": "r.txt", "sha256": _sha("stale\n")}],
        [{"path": "r.txt", "sha256": _sha("stale\n")}],
    ]


def test_changed_back_to_the_first_start_in_a_second_attempt_is_no_change(
    tmp_path: Path,
) -> None:
    plan, script = _changed_plan(tmp_path, RESTORE, "2")
    _, doc = resume(plan, script)
    row = _row(doc, "t")
    assert (row["state"], row["attempts"]) == ("FAILED", 2)
    assert "the content is the same as when the task first started" in row["reason"]


def test_changed_to_new_content_across_a_resume_is_done(tmp_path: Path) -> None:
    plan, script = _changed_plan(tmp_path, REDO, "1")
    _, first = resume(plan, script)
    assert _row(first, "t")["state"] == "FAILED"
    _, second = resume(plan, script)
    assert _row(second, "t")["state"] == "DONE", _row(second, "t")["reason"]
    assert (tmp_path / "r.txt").read_text() == "final\n"


def test_changed_by_a_parallel_sibling_is_not_this_attempts_change(tmp_path: Path) -> None:
    """The sibling, an accomplice, writes r.txt while this worker's own `sh` call runs: read
    from content before and after the call, that was this call's change; the sandbox says
    this call wrote nothing."""
    (tmp_path / "r.txt").write_text("stale\n")
    plan, script = setup(
        tmp_path,
        task("Redo r", "t", "test -s r.txt", contract="changed r.txt", max_attempts="1")
        + task("Helper", "helper", "test -s h.txt"),
        "workers:\n  t:\n" + _sh("sleep 1.5; cat r.txt") + "    - say: DONE\n"
        "  helper:\n" + _sh("sleep 0.5; echo new > r.txt; echo h > h.txt") + "    - say: DONE\n",
    )
    _, doc = resume(plan, script, "--max-parallel", "2")
    row = _row(doc, "t")
    assert (tmp_path / "r.txt").read_text() == "new\n"
    assert row["state"] == "FAILED"
    assert row["reason"] == (
        "C008: changed r.txt: the record shows no tool call of this attempt changing r.txt"
    )
    [call] = [b for b in steps(plan, "tool-call") if b["task_id"] == "t"]
    assert call["wrote"] == [] and call["changed"] == ["r.txt"]  # the old reading's mistake
    assert _row(doc, "helper")["state"] == "DONE"


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


# -- a gate without :gate-files: binds every write ---------------------------------------------

GATED = (
    "#+TITLE: gated\n"
    "* TODO Write the figures\n"
    "  :PROPERTIES:\n"
    "  :ID: figures\n"
    "  :gate: approval\n"
    "  :done-when: grep -qx 'total: 42' figures.txt\n"
    "  :END:\n"
    "  Write figures.txt with `total: 42` and a note on where it came from.\n"
    "* TODO Write other\n"
    "  :PROPERTIES:\n"
    "  :ID: other\n"
    "  :done-when: grep -qx fine other.txt\n"
    "  :END:\n"
    "  Write other.txt holding fine.\n"
)


def _gated_run(tmp_path: Path, figures: list[dict[str, Any]], other: list[dict[str, Any]]) -> Path:
    script = tmp_path / "mission.yaml"
    workers = {"figures": figures, "other": other}
    script.write_text(yaml.safe_dump({"author": [GATED], "workers": workers}))
    work = tmp_path / "work"
    result = _cli("run", "figures", "--model", f"scripted:{script}", "--dir", str(work),
                  "--json", "--max-parallel", "2")  # fmt: skip
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    assert _states(doc) == {"figures": "WAITING", "other": "DONE"}
    return work


def _gate_files(work: Path) -> list[str]:
    ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    from groundskeeper.record.ledger import read_steps

    gates = [o["body"] for _, o in read_steps(ledger) if o is not None and o["step"] == "gate"]
    return [f["path"] for f in gates[-1]["files"]]


NOTE = {"tool": "write_file", "input": {"path": "note.txt", "content": "from the ledger\n"}}


def test_a_gate_binds_what_sh_wrote_so_a_change_after_approval_is_stale(tmp_path: Path) -> None:
    """The figures are written by `sh`, the note by write_file: the person approves both."""
    figures = [NOTE, {"tool": "sh", "input": {"cmd": "printf 'total: 42\\n' > figures.txt"}},
               {"say": "DONE"}]  # fmt: skip
    other = [{"tool": "write_file", "input": {"path": "other.txt", "content": "fine\n"}},
             {"say": "DONE"}]  # fmt: skip
    work = _gated_run(tmp_path, figures, other)
    assert _gate_files(work) == ["figures.txt", "note.txt"]
    assert _cli("approve", str(work), "--task", "figures", "--yes").exit_code == 0
    (work / "figures.txt").write_text("total: 42\nthe other rows were made up\n")
    code, doc = _resume(work)
    assert code == 3 and doc is not None
    assert _states(doc)["figures"] == "WAITING"
    [decision] = [b for b in _ledger(work, "gate-decision")]
    assert decision["refused"] == "stale: the artifacts changed since the gate opened"
    _verified(work)


def test_a_gate_binds_no_file_a_parallel_sibling_wrote(tmp_path: Path) -> None:
    """The sibling writes other.txt with `sh` while the gated worker's own `sh` call runs:
    the gate shows only the gated worker's files, and other.txt changing after the approval
    leaves the approval standing."""
    slow = "sleep 1.5; printf 'total: 42\\n' > figures.txt"
    figures = [NOTE, {"tool": "sh", "input": {"cmd": slow}}, {"say": "DONE"}]
    other = [{"tool": "sh", "input": {"cmd": "sleep 0.5; echo fine > other.txt"}}, {"say": "DONE"}]
    work = _gated_run(tmp_path, figures, other)
    assert _gate_files(work) == ["figures.txt", "note.txt"]
    calls = [b for b in _ledger(work, "tool-call") if b["tool"] == "sh"]
    assert {b["task_id"]: b["wrote"] for b in calls} == {
        "figures": ["figures.txt"], "other": ["other.txt"],
    }  # fmt: skip
    assert _cli("approve", str(work), "--task", "figures", "--yes").exit_code == 0
    (work / "other.txt").write_text("fine\n")  # rewritten: a new inode and mtime
    code, doc = _resume(work)
    assert code == 0 and doc is not None, doc
    assert _states(doc) == {"figures": "DONE", "other": "DONE"}
    _verified(work)


GEN = "generated/by-the-code-generator-for-the-figures"


def test_a_gate_binds_a_long_list_of_sh_writes_kept_by_its_hash(tmp_path: Path) -> None:
    """300 files with long names from one `sh` call: a list longer than 16 KiB, sealed by its
    hash and kept in the control directory; the gate still binds every one."""
    make = (
        f"mkdir -p {GEN} && python3 -c \"[open(f'{GEN}/f{{i:04}}.txt', 'w').write('x') for i in"
        " range(300)]\" && printf 'total: 42\\n' > figures.txt"
    )
    figures = [NOTE, {"tool": "sh", "input": {"cmd": make}}, {"say": "DONE"}]
    other = [{"tool": "write_file", "input": {"path": "other.txt", "content": "fine\n"}},
             {"say": "DONE"}]  # fmt: skip
    work = _gated_run(tmp_path, figures, other)
    shown = _gate_files(work)
    assert len(shown) == 302 and shown[:2] == ["figures.txt", f"{GEN}/f0000.txt"]
    [call] = [b for b in _ledger(work, "tool-call") if b["tool"] == "sh"]
    assert call["wrote"] is None and len(call["wrote_sha256"]) == 64
    assert _cli("approve", str(work), "--task", "figures", "--yes").exit_code == 0
    (work / GEN / "f0200.txt").write_text("y")
    code, doc = _resume(work)
    assert code == 3 and doc is not None and _states(doc)["figures"] == "WAITING"


def _ledger(work: Path, step: str) -> list[dict[str, Any]]:
    from groundskeeper.record.ledger import read_steps

    ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    return [o["body"] for _, o in read_steps(ledger) if o is not None and o["step"] == step]


# -- `ran`: no command an earlier member of its chain prepared ---------------------------------


def _ran_plan(tmp_path: Path, cmd: str) -> tuple[Path, Path]:
    (tmp_path / "expected.txt").write_text("one\ntwo\n")
    (tmp_path / "decoy").mkdir()
    (tmp_path / "decoy" / "expected.txt").write_text("one\n")
    return setup(
        tmp_path,
        task(
            "Match",
            "t",
            "test -s out.txt",
            contract='ran "diff expected.txt out.txt"',
            protect="expected.txt",
            max_attempts="1",
        ),
        "workers:\n  t:\n"
        '    - {tool: write_file, input: {path: out.txt, content: "one\\n"}}\n'
        '    - {tool: write_file, input: {path: decoy/out.txt, content: "one\\n"}}\n'
        + _sh(cmd)
        + "    - say: DONE\n",
    )


def test_ran_refuses_a_command_run_after_cd_into_a_decoy(tmp_path: Path) -> None:
    plan, script = _ran_plan(tmp_path, "cd decoy && diff expected.txt out.txt")
    result, doc = resume(plan, script)
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith('C010: ran "diff expected.txt out.txt": no command')
    assert "an earlier command of its chain changes what it runs on" in row["reason"]
    assert result.exit_code == 1


def test_ran_counts_a_chain_whose_earlier_members_change_nothing(tmp_path: Path) -> None:
    plan, script = _ran_plan(tmp_path, "test -s out.txt && diff expected.txt out.txt")
    (tmp_path / "expected.txt").write_text("one\n")
    result, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")["reason"]
    assert result.exit_code == 0
