"""Issue 23: a worker that tries to rewrite a golden file its check compares against fails
`protected_input_changed`, naming the file, whatever the tool it used — the fence refuses
the change and the refusal is the verdict, not a later `diff` that happens to fail. Through
the CLI (`resume --json`, a scripted worker), each fake beside its honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, steps, task
from tests.test_paths_cli import DIFF, _golden, _row, _script, _sh, _write

REWRITES = {
    "write_file": _write("tests/expected.txt", "41"),
    "redirection": _sh("echo 41 > tests/expected.txt"),
    "append": _sh("echo 41 >> tests/expected.txt"),
    "python3": _sh("python3 -c \"open('tests/expected.txt', 'w').write('41')\""),
    "mv-over": _sh("echo 41 > t.txt; mv t.txt tests/expected.txt"),
    "cp-over": _sh("echo 41 > t.txt; cp t.txt tests/expected.txt"),
    "rm": _sh("rm tests/expected.txt"),
    "sed-i": _sh("sed -i s/42/41/ tests/expected.txt"),
    "symlink-over": _sh(
        "python3 -c \"import os; os.symlink('../out/result.txt', 'tests/l');"
        " os.replace('tests/l', 'tests/expected.txt')\""
    ),
    "directory-moved": _sh("mv tests old; mkdir tests; echo 41 > tests/expected.txt"),
    "cd-then-write": _sh("cd tests && echo 41 > expected.txt"),
}


@pytest.mark.parametrize("how", sorted(REWRITES))
def test_rewriting_a_golden_fails_naming_it(tmp_path: Path, how: str) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, max_attempts="1"),
        _script("t", _write("out/result.txt", "41"), REWRITES[how]),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith(
        "protected_input_changed: protected input changed: tests/expected.txt"
    ), row["reason"]
    assert "refused" in row["reason"]
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    (start,) = steps(plan, "run-start")
    assert start["protected_automatically"] == ["tests/expected.txt"]
    assert result.exit_code == 1


def test_the_honest_twin_that_only_reads_the_golden_is_done(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, max_attempts="1"),
        _script("t", _sh("wc -l tests/expected.txt; mkdir -p out; echo $((6*7)) > out/result.txt")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


def test_a_second_honest_attempt_is_judged_on_its_own(tmp_path: Path) -> None:
    # the first attempt's refused rewrite fails that attempt (and is kept as a lie); the
    # next attempt, which does the work, is DONE
    _golden(tmp_path)
    script = (
        "workers:\n  t:\n"
        + _sh("echo 41 > tests/expected.txt")
        + "    - say: DONE\n"
        + _sh("mkdir -p out; echo 42 > out/result.txt")
        + "    - say: DONE\n"
    )
    plan, script_path = setup(tmp_path, task("Answer", "t", DIFF, max_attempts="2"), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    row = _row(doc, "t")
    assert (row["state"], row["attempts"]) == ("DONE", 2), doc
    assert result.exit_code == 0


def test_writable_lets_the_worker_change_it(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, max_attempts="1", writable="tests/expected.txt"),
        _script("t", _write("out/result.txt", "41"), REWRITES["redirection"]),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE"
    assert (tmp_path / "tests" / "expected.txt").read_text() == "41\n"
    assert result.exit_code == 0


def test_a_refused_rewrite_is_shown_as_a_lie_beside_the_last_reason(tmp_path: Path) -> None:
    _golden(tmp_path)
    script = (
        "workers:\n  t:\n"
        + _sh("python3 -c \"open('tests/expected.txt','w')\"")
        + "    - say: DONE\n    - say: DONE\n"
    )
    plan, script_path = setup(tmp_path, task("Answer", "t", DIFF, max_attempts="2"), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("nonzero_status: check line 1")  # the last attempt's
    assert row["lies"] == [
        "attempt 1: protected input changed: tests/expected.txt: the worker tried to change"
        " it, and the sandbox refused (an expected file the check of t compares against)"
    ]
    assert result.exit_code == 1
