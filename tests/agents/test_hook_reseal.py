"""adversary-14 F10, F9, F1: what the user's seal and set-up bake in, said to the user.

F10: after a session the hook refused for a rewritten key, a routine `agent seal` took the
rewritten key as the one the next session is held to, saying only "sealed …". The seal now
compares the workdir with the last sealed snapshot, reads each change by the hook's rule
(`acceptance.check_inputs.sealed_side`) and refuses one on a check's side unless the user
names it (`--accept PATH`, `--accept-changes`), sealing it with its hashes before and after.
F9: `agent setup cursor|gemini|codex` replaced the user's own hook files; they are merged
into now, with a backup, and one that does not parse is refused. F1: setup prints lint's
warnings (T025, the limit of a pytest check against code that switches pytest off)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents.gated import ledger_steps
from tests.agents.test_hook_as_a_run import allowed, pytest_project, started
from tests.agents.test_hook_check_inputs import program_project
from tests.agents.test_hook_session_bound import gk, hook


def _seals(work: Path) -> list[dict[str, object]]:
    return [b for _, b in ledger_steps(work) if b.get("kind") == "hook-seal"]


# -- F10: a re-seal takes a changed check input only by the user's word --------------------------


def test_a_routine_seal_refuses_the_key_a_refused_session_rewrote(tmp_path: Path) -> None:
    work = program_project(tmp_path)
    started(work)
    (work / "out.txt").write_text("7\n")
    (work / "key.txt").write_text("7\n")
    assert "the check read `key.txt`" in (hook(work).blocked or "")
    seals = len(_seals(work))
    told = gk(work, "agent", "seal", "plan.org")
    assert told.returncode == 2, told.stderr
    assert "not taken: `key.txt`: changed (sha256 " in told.stderr, told.stderr
    assert "an input a check may read, for task `a`" in told.stderr
    assert "seal with `--accept key.txt` if it is right as it is" in told.stderr
    assert "`--accept-changes`" in told.stderr
    assert "out.txt" not in told.stderr  # the work is not refused
    assert len(_seals(work)) == seals  # nothing sealed
    # the next session is still held to the true key
    assert "the check read `key.txt`" in (hook(work, session="s-2").blocked or "")


def test_the_honest_twin_seals_the_work_and_lists_it(tmp_path: Path) -> None:
    work = program_project(tmp_path)
    started(work)
    (work / "out.txt").write_text("42\n")
    assert allowed(hook(work)), hook(work)
    told = gk(work, "agent", "seal", "plan.org")
    assert told.returncode == 0, told.stderr
    assert "changed since the last seal (the work, taken as it is):" in told.stderr
    assert "`out.txt`: added (sha256 " in told.stderr
    assert "accepted" not in _seals(work)[-1]


def test_a_named_change_is_sealed_with_its_hashes_before_and_after(tmp_path: Path) -> None:
    work = program_project(tmp_path)
    started(work)
    (work / "key.txt").write_text("43\n")
    (work / "helper.py").write_text("def ok():\n    return True\n")
    one = gk(work, "agent", "seal", "plan.org", "--accept", "key.txt")
    assert one.returncode == 2, one.stderr
    assert "not taken: `helper.py`" in one.stderr  # the checker's module: named too
    assert "the check's own program or test, for task `a`" in one.stderr
    assert "not taken: `key.txt`" not in one.stderr
    both = gk(work, "agent", "seal", "plan.org", "--accept", "key.txt", "--accept", "helper.py")
    assert both.returncode == 0, both.stderr
    assert "taken on a check's side (your --accept; sealed with its hashes):" in both.stderr
    seal = _seals(work)[-1]
    accepted = {a["path"]: a for a in seal["accepted"]}  # type: ignore[attr-defined]
    assert sorted(accepted) == ["helper.py", "key.txt"]
    assert accepted["key.txt"]["change"] == "changed"
    assert accepted["key.txt"]["before"] != accepted["key.txt"]["after"]
    assert str(accepted["key.txt"]["after"]).startswith("sha256:")
    assert "accept_changes" not in seal
    shown = gk(work, "ledger", "show", "plan.org").stdout
    assert "accepted changed check input(s): helper.py, key.txt" in shown
    # the next session is held to what the user took
    (work / "out.txt").write_text("0\n")
    assert allowed(hook(work, session="s-2")), hook(work, session="s-2")


def test_accept_changes_takes_every_change_and_says_so(tmp_path: Path) -> None:
    work = program_project(tmp_path)
    started(work)
    (work / "key.txt").write_text("43\n")
    told = gk(work, "agent", "seal", "plan.org", "--accept-changes")
    assert told.returncode == 0, told.stderr
    seal = _seals(work)[-1]
    assert seal["accept_changes"] is True
    assert [a["path"] for a in seal["accepted"]] == ["key.txt"]  # type: ignore[attr-defined]


def test_accept_naming_no_change_is_refused(tmp_path: Path) -> None:
    work = program_project(tmp_path)
    started(work)
    (work / "key.txt").write_text("43\n")
    told = gk(work, "agent", "seal", "plan.org", "--accept", "kye.txt")
    assert told.returncode == 2, told.stderr
    assert "--accept kye.txt: no such change since the last seal" in told.stderr
    assert "(the changes on a check's side: key.txt)" in told.stderr


def test_a_removed_test_file_and_a_new_conftest_are_not_taken_silently(tmp_path: Path) -> None:
    work = pytest_project(tmp_path)
    started(work)
    (work / "tests" / "test_calc.py").unlink()
    (work / "conftest.py").write_text("import os\nos._exit(0)\n")
    told = gk(work, "agent", "seal", "plan.org")
    assert told.returncode == 2, told.stderr
    assert "not taken: `tests/test_calc.py`: removed (was sha256 " in told.stderr, told.stderr
    assert "not taken: `conftest.py`: added (sha256 " in told.stderr
    assert "a file that configures the Python the check runs" in told.stderr
    # the honest twin: the code under test fixed, its test kept
    (work / "conftest.py").unlink()
    (work / "tests" / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    fixed = gk(work, "agent", "seal", "plan.org")
    assert fixed.returncode == 0, fixed.stderr
    assert "`calc.py`: changed (sha256 " in fixed.stderr


def test_setting_up_again_compares_as_the_seal_does(tmp_path: Path) -> None:
    work = program_project(tmp_path)
    started(work)
    (work / "key.txt").write_text("7\n")
    again = gk(work, "agent", "setup", "claude-code", "--plan", str(work / "plan.org"))
    assert again.returncode == 2, again.stderr
    assert "not taken: `key.txt`" in again.stderr
    assert "is not sealed (agent setup claude-code)" in again.stderr
    taken = gk(
        work, "agent", "setup", "claude-code", "--plan", str(work / "plan.org"), "--accept",
        "key.txt",
    )  # fmt: skip
    assert taken.returncode == 0, taken.stderr


# -- F9: set-up merges into the user's own hook files ------------------------------------------

CURSOR = {
    "version": 1,
    "hooks": {
        "beforeShellExecution": [{"command": "./audit.sh"}],
        "stop": [{"command": "./notify.sh"}],
    },
}
GEMINI = {
    "model": {"name": "gemini-2.5-pro"},
    "mcpServers": {"x": {"command": "srv"}},
    "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"type": "command", "command": "./guard.sh"}]}]},
}  # fmt: skip
CODEX = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
    {"type": "command", "command": "./guard.sh"}]}]}}  # fmt: skip


def _project_with_configs(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text(
        "* TODO Quick\n  :PROPERTIES:\n  :ID: q\n  :done-when: test -f ok.txt\n  :END:\n"
        "  Write ok.txt.\n"
    )
    for name, document in ((".cursor/hooks.json", CURSOR), (".gemini/settings.json", GEMINI),
                           (".codex/hooks.json", CODEX)):  # fmt: skip
        (work / name).parent.mkdir()
        (work / name).write_text(json.dumps(document))
    return work


def test_setup_keeps_the_users_own_hooks_and_settings(tmp_path: Path) -> None:
    work = _project_with_configs(tmp_path)
    plan = str(work / "plan.org")
    for agent, name, before, ours in (
        ("cursor", ".cursor/hooks.json", CURSOR, ("stop",)),
        ("gemini", ".gemini/settings.json", GEMINI, ("SessionStart", "AfterAgent")),
        ("codex", ".codex/hooks.json", CODEX, ("SessionStart", "Stop")),
    ):
        told = gk(work, "agent", "setup", agent, "--plan", plan)
        assert told.returncode == 0, told.stderr
        assert f"merged groundskeeper's hooks ({', '.join(ours)})" in (told.stderr), told.stderr
        assert f"its content before: {work / name}.groundskeeper-backup" in told.stderr
        after = json.loads((work / name).read_text())
        backup = json.loads((work / (name + ".groundskeeper-backup")).read_text())
        assert backup == before
        for key, value in before.items():  # every setting of the user's kept
            if key != "hooks":
                assert after[key] == value, (agent, key)
        for event, entries in before["hooks"].items():  # type: ignore[attr-defined]
            for entry in entries:
                assert entry in after["hooks"][event], (agent, event)
        for event in ours:
            commands = json.dumps(after["hooks"][event])
            assert "--require-seal" in commands, (agent, event)
    gemini = gk(work, "agent", "setup", "gemini", "--plan", plan).stderr
    assert "kept: your hooks BeforeTool ×1; your settings `mcpServers`, `model`" in gemini
    # set up again: groundskeeper's entry replaced, not doubled; the user's still there
    again = gk(work, "agent", "setup", "cursor", "--plan", plan)
    assert "(replacing 1 of an earlier set-up)" in again.stderr, again.stderr
    stops = json.loads((work / ".cursor/hooks.json").read_text())["hooks"]["stop"]
    assert len(stops) == 2 and {"command": "./notify.sh"} in stops


def test_setup_refuses_a_config_that_does_not_parse_and_leaves_it(tmp_path: Path) -> None:
    work = _project_with_configs(tmp_path)
    broken = '{"model": "x", "hooks": {'
    (work / ".gemini/settings.json").write_text(broken)
    told = gk(work, "agent", "setup", "gemini", "--plan", str(work / "plan.org"))
    assert told.returncode == 2, told.stderr
    assert f"{work / '.gemini/settings.json'} is there but is not JSON" in told.stderr
    assert "never replaces it" in told.stderr
    assert (work / ".gemini/settings.json").read_text() == broken
    assert not (work / ".gemini/settings.json.groundskeeper-backup").exists()
    (work / ".cursor/hooks.json").write_text('{"hooks": {"stop": {"command": "x"}}}')
    odd = gk(work, "agent", "setup", "cursor", "--plan", str(work / "plan.org"))
    assert odd.returncode == 2, odd.stderr
    assert "not an agent configuration groundskeeper can merge into" in odd.stderr


def test_setup_writes_a_fresh_file_where_there_was_none(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text(
        "* TODO Quick\n  :PROPERTIES:\n  :ID: q\n  :done-when: test -f ok.txt\n  :END:\n"
    )
    told = gk(work, "agent", "setup", "cursor", "--plan", str(work / "plan.org"))
    assert told.returncode == 0, told.stderr
    assert "merged" not in told.stderr
    document = json.loads((work / ".cursor/hooks.json").read_text())
    assert list(document["hooks"]) == ["stop"] and document["version"] == 1


# -- F1: lint's warnings at set-up and seal -----------------------------------------------------


def test_setup_and_seal_print_t025_for_a_pytest_check(tmp_path: Path) -> None:
    work = pytest_project(tmp_path)
    told = gk(work, "agent", "setup", "claude-code", "--plan", str(work / "plan.org"))
    assert told.returncode == 0, told.stderr
    assert "[T025]" in told.stderr, told.stderr
    assert "T025's remedy, `:contract: pytest`, is confirmed only by `groundskeeper run`" in (
        told.stderr
    )
    sealed = gk(work, "agent", "seal", "plan.org")
    assert "[T025]" in sealed.stderr, sealed.stderr
    # the twin: a check that runs no pytest is not warned of it
    (tmp_path / "other").mkdir()
    other = program_project(tmp_path / "other")
    quiet = gk(other, "agent", "setup", "claude-code", "--plan", str(other / "plan.org"))
    assert quiet.returncode == 0, quiet.stderr
    assert "[T025]" not in quiet.stderr


def test_hook_help_says_how_claude_codes_stop_is_blocked() -> None:
    from click.testing import CliRunner

    from groundskeeper.cli.app import main

    text = " ".join(CliRunner().invoke(main, ["hook", "--help"]).output.split())
    assert 'for Claude Code a JSON `{"decision": "block", "reason": …}` on stdout with exit 0' in (
        text
    )
    assert "exit 2 with the reason on stderr (TaskCompleted, TeammateIdle, ConfigChange" in text
