"""The fence, attacked through the shell: a plan's control directory and $GROUNDSKEEPER_HOME
are absent by every spelling a worker can write, and the running plan is read-only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.record.control import ControlDir
from groundskeeper.sandbox import fence as fences

LEDGER = "LEDGER-LINE-1\n"
PLAN = "* TODO x\n"


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """A workdir holding a running plan, its control directory and a subdirectory."""
    root = tmp_path / "work"
    (root / "sub").mkdir(parents=True)
    (root / "plan.org").write_text(PLAN)
    (root / "other.org").write_text("* DONE forged\n")
    control = ControlDir.for_plan(root / "plan.org").ensure()
    control.ledger.write_text(LEDGER)
    with fences.enforced(fences.for_plan(root / "plan.org", control.root)):
        yield root


def sh(work: Path, cmdline: str, read_only: bool = False) -> sandbox.ShellResult:
    return sandbox.run(cmdline, workdir=work, read_only=read_only, timeout=10)


def intact(work: Path) -> None:
    assert (work / ".groundskeeper" / "plan.org" / "_steps.jsonl").read_text() == LEDGER
    assert (work / "plan.org").read_text() == PLAN


CONTROL_SPELLINGS = [
    ".groundskeeper/plan.org/_steps.jsonl",
    "./.groundskeeper/plan.org/_steps.jsonl",
    ".//.groundskeeper//plan.org/./_steps.jsonl",
    "sub/../.groundskeeper/plan.org/_steps.jsonl",
    ".GROUNDSKEEPER/plan.org/_steps.jsonl",
    ".GroundSkeeper/plan.org/_steps.jsonl",
]


@pytest.mark.parametrize("path", CONTROL_SPELLINGS)
@pytest.mark.parametrize(
    "template",
    [
        "cat {p}",  # a command (WASI)
        "cat < {p}",  # a redirection (the interpreter)
        "echo forged > {p}",
        "echo forged >> {p}",
        "rm -f {p} && test ! -e {p} && ls {p}",
        "cp other.org {p}",
        "test -e {p}",
        "wc -c {p}",
        # the grammar's own ways in: groups, loops, here-documents, [[ ]], xargs, find -exec
        "{{ echo forged; }} > {p}",
        "( echo forged ) >> {p}",
        "for x in 1; do echo forged; done > {p}",
        "if true; then echo forged; fi > {p}",
        "cat <<EOF > {p}\nforged\nEOF",
        "cat > {p} <<< forged",
        "while read l; do echo $l; done < {p}",
        "[[ -e {p} ]]",
        "[[ -f {p} || -L {p} ]]",
        "echo {p} | xargs cat",
        "echo {p} | xargs -I F cp other.org F",
        "find . -name '_steps*' -exec cat {{}} \\; | grep LEDGER",
        "find . -path '*plan.org*' -exec cat {{}} + | grep LEDGER",
        "X=$(cat {p}); [[ -n $X ]]",
    ],
)
def test_control_files_are_absent_by_every_spelling(work: Path, path: str, template: str) -> None:
    result = sh(work, template.format(p=path))
    assert result.status != 0, (template, path, result)
    assert "LEDGER" not in result.stdout
    intact(work)


@pytest.mark.parametrize(
    "cmdline",
    [
        "ls -a",
        "ls -a .groundskeeper",
        "find .",
        "find . -name '*steps*'",
        "echo .*",
        "echo .*/*/*",
        "echo */../.g*/*",
        "cd .groundskeeper",
        "cd sub && cat ../.groundskeeper/plan.org/_steps.jsonl",
        "cd sub; cd ..; cat .groundskeeper/plan.org/_steps.jsonl",
        "grep -r LEDGER .",
        "cat .g*/*/_steps.jsonl",
        "cat .groundskeeper/*/_steps.jsonl",
    ],
)
def test_listing_globbing_and_cd_never_show_it(work: Path, cmdline: str) -> None:
    result = sh(work, cmdline)
    assert "groundskeeper" not in result.stdout.lower(), (cmdline, result)
    assert "LEDGER" not in result.stdout, (cmdline, result)
    intact(work)


@pytest.mark.parametrize(
    "cmdline",
    [
        "mv .groundskeeper gone",
        "mv .groundskeeper/plan.org gone",
        "rm -rf .groundskeeper",
        "mkdir .groundskeeper",
        "mkdir -p .groundskeeper/plan.org",
        "touch .groundskeeper",
        "ln -s .groundskeeper/plan.org door && cat door/_steps.jsonl",
        "ln -s sub/../.groundskeeper door && cat door/plan.org/_steps.jsonl",
        "mkdir d && ln -s ../.groundskeeper d/door && cat d/door/plan.org/_steps.jsonl",
    ],
)
def test_it_cannot_be_moved_removed_squatted_or_linked_to(work: Path, cmdline: str) -> None:
    result = sh(work, cmdline)
    assert "LEDGER" not in result.stdout
    intact(work)
    assert not (work / "gone").exists()
    assert not (work / "door").exists() or not (work / "door").resolve().is_dir()


def test_a_link_made_outside_the_sandbox_is_not_followed(work: Path) -> None:
    (work / "door").symlink_to(".groundskeeper/plan.org")
    (work / "deep").mkdir()
    (work / "deep" / "door").symlink_to("../.groundskeeper")
    for cmdline in ("cat door/_steps.jsonl", "cat < door/_steps.jsonl", "ls door/",
                    "cat deep/door/plan.org/_steps.jsonl", "echo x > door/new"):  # fmt: skip
        result = sh(work, cmdline)
        assert result.status != 0 and "LEDGER" not in result.stdout, (cmdline, result)
    assert "_steps" not in sh(work, "ls door").stdout  # the link itself, never what is behind
    assert not (work / ".groundskeeper" / "plan.org" / "new").exists()


def test_moving_a_directory_above_the_plan_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "work"
    (root / "a" / "b").mkdir(parents=True)
    plan = root / "a" / "b" / "plan.org"
    plan.write_text(PLAN)
    control = ControlDir.for_plan(plan).ensure()
    with fences.enforced(fences.for_plan(plan, control.root)):
        for cmdline in ("mv a z", "mv a/b a/c", "rm -rf a", "mv a/b/plan.org a/b/x.org"):
            sh(root, cmdline)
            assert plan.read_text() == PLAN, cmdline
            assert control.path.is_dir(), cmdline
    # without the fence (no run), the same directory is the user's to move
    assert sh(root, "mv a z").status == 0


@pytest.mark.parametrize(
    "cmdline",
    [
        "echo '* DONE x' > plan.org",
        "echo '* DONE x' >> plan.org",
        "cp other.org plan.org",
        "mv other.org plan.org",
        "mv plan.org moved.org",
        "rm plan.org",
        "touch plan.org",
        "cat other.org > PLAN.ORG",
        "cd sub && cp ../other.org ../plan.org",
        "sed -n p other.org > ./plan.org",
        "{ echo '* DONE x'; } > plan.org",
        "cat > plan.org <<EOF\n* DONE x\nEOF",
        "echo plan.org | xargs -I F cp other.org F",
        "find . -name other.org -exec cp {} plan.org \\; && cmp other.org plan.org",
        "[[ -w plan.org ]]",
        "[[ -L .groundskeeper || -e .groundskeeper ]]",
    ],
)
def test_the_running_plan_is_read_only(work: Path, cmdline: str) -> None:
    result = sh(work, cmdline)
    assert result.status != 0, (cmdline, result)
    intact(work)


def test_a_hard_link_to_the_plan_cannot_change_it(work: Path) -> None:
    os.link(work / "plan.org", work / "alias.org")
    for cmdline in ("echo x > alias.org", "echo x >> alias.org", "cp other.org alias.org"):
        assert sh(work, cmdline).status != 0, cmdline
    intact(work)


def test_a_file_named_like_the_plan_elsewhere_is_ordinary(work: Path) -> None:
    assert sh(work, "mkdir drafts && echo x > drafts/plan.org && cat drafts/plan.org").stdout == (
        "x\n"
    )


def test_the_home_is_absent_when_it_lies_in_the_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    home = work / ".config" / "groundskeeper"
    home.mkdir(parents=True)
    (home / "signing_key.pem").write_text("PRIVATE\n")
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(home))
    for cmdline in (
        "cat .config/groundskeeper/signing_key.pem",
        "cat < .config/groundskeeper/signing_key.pem",
        "cd .config && cat groundskeeper/signing_key.pem",
        "cat .config/*/signing_key.pem",
        "ls -a .config",
        "find . -type f",
        "grep -r PRIVATE .",
        "ln -s .config/groundskeeper k && cat k/signing_key.pem",
        "echo x > .config/groundskeeper/new",
        "rm -rf .config",
        "mv .config moved",
    ):
        result = sh(work, cmdline)
        assert "PRIVATE" not in result.stdout and "signing_key" not in result.stdout, cmdline
    assert (home / "signing_key.pem").read_text() == "PRIVATE\n"
    assert not (home / "new").exists()


def test_checks_read_only_see_the_same_fence(work: Path) -> None:
    result = sh(work, "cat .groundskeeper/plan.org/_steps.jsonl", read_only=True)
    assert result.status == 1 and "No such file" in result.stderr
