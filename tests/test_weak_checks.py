"""Checks whose own text accepts a fake: a negated command whose status is an error (`! grep
-q ERROR build.log` with the log removed) fails the check at its line, in a check only."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.sandbox import run
from tests.test_cli_run import resume, setup, states, task

LOG = "ERROR: link failed\n"


def _build(tmp_path: Path, check: str, worker: str) -> tuple[str, str | None]:
    (tmp_path / "build.log").write_text(LOG)
    plan, script = setup(tmp_path, task("Fix the build", "build", check), worker)
    result, doc = resume(plan, script)
    (entry,) = doc["tasks"]
    return entry["state"], entry["reason"]


REMOVES_LOG = "workers:\n  build: [{tool: sh, input: {cmd: rm build.log}}, {say: DONE}]\n"
FIXES_LOG = (
    "workers:\n  build: [{tool: write_file, input: {path: build.log, content: 'ok\\n'}},"
    " {say: DONE}]\n"
)


def test_a_removed_log_fails_a_negated_grep(tmp_path: Path) -> None:
    state, reason = _build(tmp_path, "! grep -q ERROR build.log", REMOVES_LOG)
    assert state == "FAILED"
    assert reason == (
        "negated_error: check line 1: `! grep -q ERROR build.log`: `grep` exited with status 2,"
        " an error (a missing or unreadable file, a bad option or expression), not a \"no\": in"
        ' a check `!` passes only on a "no"'
    )


def test_a_fixed_log_passes_the_same_check(tmp_path: Path) -> None:
    state, reason = _build(tmp_path, "! grep -q ERROR build.log", FIXES_LOG)
    assert (state, reason) == ("DONE", None)


def test_the_negation_decides_in_an_if_and_in_a_list_too(tmp_path: Path) -> None:
    for check in (
        "if ! grep -q ERROR build.log; then true; else exit 1; fi",
        "test -n x && ! grep -q ERROR build.log",
        "! grep -q ERROR build.log || exit 1",
    ):
        (tmp_path / ".groundskeeper").exists() and _wipe(tmp_path)
        state, reason = _build(tmp_path, check, REMOVES_LOG)
        assert state == "FAILED" and reason is not None, check
        assert reason.startswith("negated_error: check line 1:"), (check, reason)


def _wipe(tmp_path: Path) -> None:
    import shutil

    for child in tmp_path.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()


def _check(tmp_path: Path, line: str) -> tuple[int, str | None]:
    result = run(line, workdir=tmp_path, read_only=True, errexit=True, sentinel="S")
    return result.status, result.negated_error


def test_only_an_error_status_is_refused(tmp_path: Path) -> None:
    (tmp_path / "build.log").write_text(LOG)
    assert _check(tmp_path, "! grep -q NOPE build.log") == (0, None)  # "no": a pass
    assert _check(tmp_path, "! grep -q ERROR build.log") == (1, None)  # "yes": a failure
    status, why = _check(tmp_path, "! cmp build.log missing.txt")
    assert status == 2 and why is not None and why.startswith("`cmp` exited with status 2")
    status, why = _check(tmp_path, "! test 1 -gt x")
    assert status == 2 and why is not None and why.startswith("`test` exited with status 2")
    status, why = _check(tmp_path, "! grep -q x < missing.txt")
    assert status == 1 and why is not None and why.startswith("the negated command could not")
    status, why = _check(tmp_path, "! echo missing.txt | xargs grep -q x")
    assert status == 123 and why is not None and why.startswith("`grep` exited with status 2")
    status, why = _check(tmp_path, "set -o pipefail\n! grep x missing.txt | cat")
    assert status == 2 and why is not None and why.startswith("`grep` exited with status 2")


def test_a_workers_shell_keeps_bashs_negation(tmp_path: Path) -> None:
    result = run("! grep -q x missing.txt", workdir=tmp_path)
    assert (result.status, result.negated_error) == (0, None)
