"""A DONE carried from an earlier run meets the flags of the run that carries it (F10, F23):
`--require-checks` does not keep a DONE that rests on the worker's word, `--require-red` does
not keep one whose check was never seen red. A DONE that meets them is kept."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import resume, setup, states, task

SAYS_DONE = "workers:\n  sum:\n    - say: 'DONE: wrote it (not really)'\n"


def test_require_checks_does_not_keep_a_carried_bare_claim(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("Write the summary", "sum", max_attempts="1"),
                         SAYS_DONE * 1 + "    - say: 'DONE: again'\n")  # fmt: skip
    _, first = resume(plan, script)
    assert states(first)["sum"] == ("DONE", 1, False)  # unverified, as documented
    result, second = resume(plan, script, "--require-checks")
    assert result.exit_code == 1 and not second["ok"]
    (row,) = second["tasks"]
    assert (row["state"], row["verified"]) == ("FAILED", False)
    assert row["reason"] == "no acceptance check (--require-checks)"


def test_require_checks_keeps_a_carried_checked_done(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Write hello", "hello", "grep -qx hello out.txt"),
        "workers:\n  hello:\n    - {tool: sh, input: {cmd: 'echo hello > out.txt'}}\n"
        "    - say: DONE\n",
    )
    resume(plan, script)
    result, second = resume(plan, script, "--require-checks")
    assert result.exit_code == 0 and second["ok"]
    assert states(second)["hello"][0] == "DONE"


def test_require_red_does_not_keep_a_carried_done_never_seen_red(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("hello\n")  # passes before any work (R007 in run 1)
    plan, script = setup(tmp_path, task("Write hello", "hello", "grep -qx hello out.txt"),
                         "workers:\n  hello:\n    - say: DONE\n")  # fmt: skip
    _, first = resume(plan, script)
    assert states(first)["hello"] == ("DONE", 1, True)
    assert "R007" in [d["code"] for d in first["diagnostics"]]
    result, second = resume(plan, script, "--require-red")
    assert result.exit_code == 1
    (row,) = second["tasks"]
    assert row["state"] == "FAILED"
    assert row["reason"].startswith(
        "red-first: a DONE carried from an earlier run whose check was never seen red"
    )


def test_require_red_keeps_a_carried_done_seen_red_first(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Write hello", "hello", "grep -qx hello out.txt"),
        "workers:\n  hello:\n    - {tool: sh, input: {cmd: 'echo hello > out.txt'}}\n"
        "    - say: DONE\n",
    )
    resume(plan, script)
    result, second = resume(plan, script, "--require-red")
    assert result.exit_code == 0 and second["ok"]
    assert states(second)["hello"][0] == "DONE"
