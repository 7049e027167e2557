"""Adversary-11 F17, F18, F22: a worker (or a sibling) replaces the directory a check `cd`s
into with a symbolic link, so the check's `../KEY` — a visible key, a hidden one, the hidden
checker itself — is read where the link leads: files the worker made. A pass whose paths
went through a link made or changed during the work fails, naming the link
(`acceptance.check_links`), however the check met it; a link there before the work resolves
as it did when the check was written. Through the CLI (`resume --json`, a scripted worker),
each fake beside its honest twin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.test_cli_run import HEAD, resume, setup, task
from tests.test_paths_cli import _row, _script, _sh

#: the worker's fake tree, and `work` made a link to it (python: the sandbox has no `ln`)
FAKE = _sh(
    "mkdir -p fake/sub fake/keys && echo junk > fake/keys/exp.txt && echo junk > fake/sub/out.txt"
    " && rm -rf work"
) + _sh("python3 -c \"import os; os.symlink('fake/sub', 'work')\"")


def _tree(root: Path) -> None:
    (root / "keys").mkdir()
    (root / "keys" / "exp.txt").write_text("real\n")
    (root / "work").mkdir()


CHECKS = {
    "cd-dotdot": "cd work && diff out.txt ../keys/exp.txt",
    "path-dotdot": "diff work/out.txt work/../keys/exp.txt",
    "redirect-dotdot": "cd work && diff - ../keys/exp.txt < out.txt",
    "python-chdir": (
        "python3 -c \"import os, sys; os.chdir('work');"
        " sys.exit(open('out.txt').read() != open('../keys/exp.txt').read())\""
    ),
}


@pytest.mark.parametrize("how", sorted(CHECKS))
def test_a_link_made_on_the_checks_path_fails_naming_it(tmp_path: Path, how: str) -> None:
    _tree(tmp_path)
    plan, script = setup(
        tmp_path, task("Write work/out.txt", "t", CHECKS[how], max_attempts="1"), _script("t", FAKE)
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED", doc
    assert row["reason"].startswith(
        "protected_input_changed: link on the check's path: `work` is a symbolic link to"
        " `fake/sub` made during the work"
    ), row["reason"]
    assert os.readlink(tmp_path / "work") == "fake/sub"
    assert (tmp_path / "keys" / "exp.txt").read_text() == "real\n"
    assert result.exit_code == 1


def test_a_hidden_key_behind_a_made_link_fails(tmp_path: Path) -> None:
    # F18: the key is hidden; the worker never reads it, it makes its own and points `work`
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "key.txt").write_text("secret\n")
    (tmp_path / "work").mkdir()
    fake = _sh(
        "mkdir -p fake/sub fake/held && echo junk > fake/held/key.txt"
        " && echo junk > fake/sub/out.txt && rm -rf work"
    ) + _sh("python3 -c \"import os; os.symlink('fake/sub', 'work')\"")
    check = "cd work && cmp -s out.txt ../held/key.txt"
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + "#+HIDE: held/key.txt\n" + task("Secret", "t", check, max_attempts="1"))
    script = tmp_path / "workers.yaml"
    script.write_text(_script("t", fake))
    _, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED", doc
    assert "`work` is a symbolic link to `fake/sub` made during the work" in row["reason"]


def test_a_hidden_checker_behind_a_made_link_fails(tmp_path: Path) -> None:
    # F22: `cd out && python3 ../tools/check.py` would run the worker's checker
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "check.py").write_text(
        "import sys\nsys.exit(open('report.txt').read() != 'total: 12\\n')\n"
    )
    (tmp_path / "out").mkdir()
    fake = _sh(
        'mkdir -p fake/out fake/tools && echo "raise SystemExit(0)" > fake/tools/check.py'
        " && echo junk > fake/out/report.txt && rm -rf out"
    ) + _sh("python3 -c \"import os; os.symlink('fake/out', 'out')\"")
    check = "cd out && python3 ../tools/check.py"
    plan, script = setup(
        tmp_path,
        task("Report", "t", check, max_attempts="1", hide="tools/check.py"),
        _script("t", fake),
    )
    _, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED", doc
    assert "`out` is a symbolic link to `fake/out` made during the work" in row["reason"]


def test_a_link_a_sibling_made_fails_the_victim(tmp_path: Path) -> None:
    _tree(tmp_path)
    plan, script = setup(
        tmp_path,
        "* TODO Project\n  :PROPERTIES:\n  :ID: p\n  :ORDERED: t\n  :END:\n"
        + task("Notes", "acc", "test -s notes.md", level=2, max_attempts="1")
        + task("Write work/out.txt", "vic", CHECKS["cd-dotdot"], level=2, max_attempts="1"),
        "workers:\n  acc:\n"
        + FAKE.replace("&& rm -rf work", "&& echo hi > notes.md && rm -rf work")
        + "    - say: DONE\n  vic:\n    - say: DONE\n",
    )
    _, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "acc")["state"] == "DONE", doc
    row = _row(doc, "vic")
    assert row["state"] == "FAILED", doc
    assert "`work` is a symbolic link to `fake/sub` made during the work" in row["reason"]


def test_a_link_changed_during_the_work_fails(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "exp.txt").write_text("real\n")
    (tmp_path / "build").mkdir()
    os.symlink("build", tmp_path / "work")
    repoint = _sh(
        "mkdir -p fake/sub fake/keys && echo junk > fake/keys/exp.txt"
        " && echo junk > fake/sub/out.txt"
    ) + _sh("python3 -c \"import os; os.symlink('fake/sub', 'w2'); os.replace('w2', 'work')\"")
    plan, script = setup(
        tmp_path,
        task("Write work/out.txt", "t", CHECKS["cd-dotdot"], max_attempts="1"),
        _script("t", repoint),
    )
    _, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED", doc
    assert (
        "`work` is a symbolic link to `fake/sub` changed (it pointed at `build`) during the work"
        in row["reason"]
    ), row["reason"]


@pytest.mark.parametrize("how", sorted(CHECKS))
def test_the_honest_twin_through_a_link_there_before_is_done(tmp_path: Path, how: str) -> None:
    # the author's own link: `work -> build`, `..` after it is the workdir, as when written
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "exp.txt").write_text("real\n")
    (tmp_path / "build").mkdir()
    os.symlink("build", tmp_path / "work")
    plan, script = setup(
        tmp_path,
        task("Write work/out.txt", "t", CHECKS[how], max_attempts="1"),
        _script("t", _sh("echo real > work/out.txt")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


def test_the_honest_twin_whose_own_link_is_off_the_checks_path_is_done(tmp_path: Path) -> None:
    _tree(tmp_path)
    work = _sh("echo real > work/out.txt") + _sh(
        "python3 -c \"import os; os.symlink('work/out.txt', 'latest.txt')\""
    )
    plan, script = setup(
        tmp_path,
        task("Write work/out.txt", "t", CHECKS["cd-dotdot"], max_attempts="1"),
        _script("t", work),
    )
    _, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert os.readlink(tmp_path / "latest.txt") == "work/out.txt"


# -- the agent hook (F17 at a Stop, adversary-11 k4) ---------------------------------------------

HOOK_PLAN = """\
* TODO Write work/out.txt
  :PROPERTIES:
  :ID: t
  :done-when: cd work && diff out.txt ../keys/exp.txt
  :END:
"""


def _hook_project(tmp_path: Path) -> Path:
    from tests.agents.test_hook_as_a_run import started

    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text(HOOK_PLAN)
    (work / "keys").mkdir()
    (work / "keys" / "exp.txt").write_text("real\n")
    (work / "build").mkdir()
    os.symlink("build", work / "work")  # the author's own link, in the sealed snapshot
    started(work)
    return work


def test_a_link_the_session_made_on_the_checks_path_blocks_the_stop(tmp_path: Path) -> None:
    from tests.agents.test_hook_session_bound import hook

    work = _hook_project(tmp_path)
    (work / "fake" / "sub").mkdir(parents=True)
    (work / "fake" / "keys").mkdir()
    (work / "fake" / "keys" / "exp.txt").write_text("junk\n")
    (work / "fake" / "sub" / "out.txt").write_text("junk\n")
    (work / "work").unlink()
    os.symlink("fake/sub", work / "work")
    reason = hook(work).blocked or ""
    assert (
        "link on the check's path: `work` is a symbolic link to `fake/sub` changed"
        " (it pointed at `build`) during the work" in reason
    ), reason


def test_the_honest_session_through_the_sealed_link_may_stop(tmp_path: Path) -> None:
    from tests.agents.test_hook_as_a_run import allowed
    from tests.agents.test_hook_session_bound import hook

    work = _hook_project(tmp_path)
    (work / "build" / "out.txt").write_text("real\n")
    assert allowed(hook(work)), hook(work)
