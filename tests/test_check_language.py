"""One reading of a check block's language (adversary-18 F8): `#+begin_src sh :check` and
org-babel's own names for a shell block, `shell` and `bash`, run in the sandbox's shell (which
reads as bash: docs/shell.md) for lint, `resume` and `groundskeeper check` alike; any other
language is an error in all three, with one message. Before, lint called `shell` and `bash`
T006 errors while `check` ran `shell` and refused `bash`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import HEAD, run_workers

REFUSED = (
    "check language `{shown}` has no sandboxed interpreter; write the check as"
    " `#+begin_src sh :check` (`shell` and `bash` read the same) or a `:done-when:` command"
)


def _plan(root: Path, language: str, check: str = "grep -qx 4711 out.txt") -> Path:
    plan = root / "plan.org"
    plan.write_text(
        HEAD + "* TODO Sum the numbers\n  :PROPERTIES:\n  :ID: t\n  :max-attempts: 1\n"
        "  :END:\n  Write out.txt with 4711.\n"
        f"  #+begin_src {language} :check\n  {check}\n  #+end_src\n"
    )
    return plan


def _cli(*argv: str) -> tuple[int, Any]:
    result = CliRunner().invoke(main, [*argv, "--json"])
    return result.exit_code, json.loads(result.stdout)


def _check_row(plan: Path) -> dict[str, Any]:
    _, doc = _cli("check", str(plan))
    (row,) = doc["tasks"]
    return row  # type: ignore[no-any-return]


@pytest.mark.parametrize("language", ["sh", "shell", "bash"])
def test_a_shell_block_runs_in_the_sandboxs_shell_for_lint_check_and_resume(
    tmp_path: Path, language: str
) -> None:
    plan = _plan(tmp_path, language, "[[ $(cat out.txt) == 4711 ]]")
    status, diagnostics = _cli("lint", str(plan))
    assert (status, diagnostics) == (0, [])
    before = _check_row(plan)
    assert (before["verdict"], before["reason"].split(":")[0]) == ("FAIL", "nonzero_status")
    write = {"tool": "write_file", "input": {"path": "out.txt", "content": "4711\n"}}
    rows = run_workers(plan, {"t": [write, {"say": "DONE"}]})
    assert (rows["t"]["state"], rows["t"]["verified"]) == ("DONE", True), rows["t"]
    after = _check_row(plan)
    assert (after["verdict"], after["reason"]) == ("PASS", None)


@pytest.mark.parametrize("language", ["python", "zsh", "SH", ""])
def test_another_language_is_one_error_for_lint_check_and_resume(
    tmp_path: Path, language: str
) -> None:
    plan = _plan(tmp_path, language)
    (tmp_path / "out.txt").write_text("4711\n")
    message = REFUSED.format(shown=language or "(none)")
    status, diagnostics = _cli("lint", str(plan))
    assert status == 1
    assert [(d["code"], d["level"], d["message"]) for d in diagnostics] == [
        ("T006", "error", message)
    ]
    row = _check_row(plan)
    assert (row["verdict"], row["reason"]) == ("FAIL", f"unsupported_language: {message}")
    status, doc = _cli("resume", str(plan), "--model", "scripted:" + str(_script(tmp_path)))
    assert status == 1
    assert [d["message"] for d in doc["diagnostics"]] == [message]
    assert doc["tasks"][0]["state"] == "TODO"  # refused before anything ran


def _script(root: Path) -> Path:
    script = root / "w.yaml"
    script.write_text("workers:\n  t:\n    - say: DONE\n")
    return script


def test_a_header_argument_the_check_would_ignore_is_one_error_for_lint_check_and_resume(
    tmp_path: Path,
) -> None:
    """adversary-19 F23: `:var want=4711` was ignored, so `$want` was empty: an empty line
    passed and the right answer failed. Now lint, `check` and `resume` refuse it alike."""
    plan = _plan(tmp_path, "sh :var want=4711", 'grep -qx "$want" out.txt')
    (tmp_path / "out.txt").write_text("\n")  # what passed before: an empty line
    message = (
        "the check block's header argument `:var want=4711` is not supported: the sandbox's"
        " shell runs the block from the workdir with no variables set, so it would be ignored;"
        " say it in the check itself (`cd public && …`, `want=3; …`)"
    )
    status, diagnostics = _cli("lint", str(plan))
    assert status == 1
    assert [(d["code"], d["level"], d["message"]) for d in diagnostics] == [
        ("T038", "error", message)
    ]
    row = _check_row(plan)
    assert (row["verdict"], row["reason"]) == ("FAIL", f"unsupported_header: {message}")
    status, doc = _cli("resume", str(plan), "--model", "scripted:" + str(_script(tmp_path)))
    assert status == 1
    assert [d["message"] for d in doc["diagnostics"]] == [message]
    assert doc["tasks"][0]["state"] == "TODO"  # refused before anything ran
