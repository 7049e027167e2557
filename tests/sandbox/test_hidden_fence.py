"""Hidden inputs (`:hide:`, issue 23), attacked through the shell and the worker's tools: a
hidden file or directory is absent to a bound worker by every spelling — listings, `stat`,
globs, `cd`, `find`, `xargs`, redirections, python3, relative and `..` paths, another letter
case, links — and nothing may be made in its place, while a check (not bound) reads it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.acceptance.protect import matched_files
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.record.control import ControlDir
from groundskeeper.sandbox import fence as fences

SECRET = "SECRET-42"


def _workdir(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "tests" / "deep").mkdir(parents=True)
    (root / "tests" / "expected.txt").write_text(SECRET + "\n")
    (root / "tests" / "deep" / "key.txt").write_text(SECRET + "-deep\n")
    (root / "tests" / "visible.txt").write_text("visible\n")
    (root / "plan.org").write_text("* TODO x\n")
    (root / "link.txt").symlink_to("tests/expected.txt")  # a way in, made beforehand
    return root


def _hiding(root: Path, patterns: tuple[str, ...]) -> fences.Fence:
    control = ControlDir.for_plan(root / "plan.org").ensure()
    plan = fences.for_plan(root / "plan.org", control.root)
    return plan.union(fences.hiding_inputs(root, matched_files(root, patterns), patterns))


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """A workdir whose `tests/expected.txt` and `tests/deep/` are hidden from this thread."""
    root = _workdir(tmp_path)
    with fences.binding(_hiding(root, ("tests/expected.txt", "tests/deep/"))):
        yield root


def sh(work: Path, cmdline: str) -> sandbox.ShellResult:
    return sandbox.run(cmdline, workdir=work, timeout=10)


def leaked(result: sandbox.ShellResult) -> bool:
    return SECRET in result.stdout or SECRET in result.stderr


SPELLINGS = [
    "tests/expected.txt",
    "./tests/expected.txt",
    "tests//./expected.txt",
    "tests/../tests/expected.txt",
    "tests/deep/../expected.txt",
    "TESTS/EXPECTED.TXT",
    "Tests/Expected.txt",
    "link.txt",  # a symlink to it
    "tests/deep/key.txt",  # inside a hidden directory
    "tests/deep/../deep/key.txt",
]


@pytest.mark.parametrize("path", SPELLINGS)
@pytest.mark.parametrize(
    "template",
    [
        "cat {p}",
        "cat < {p}",
        "cp {p} out.txt && cat out.txt",
        "head -c 100 {p}",
        "grep -r SECRET {p}",
        "wc -c {p}",
        "stat {p}",
        "test -e {p}",
        "test -f {p}",
        "[[ -e {p} ]]",
        "echo {p} | xargs cat",
        "X=$(cat {p}); [[ -n $X ]] && echo $X",
        "while read l; do echo $l; done < {p}",
        "sort {p}",
        "sha256sum {p}",
        "python3 -c \"print(open('{p}').read())\"",
        "mv {p} moved.txt && cat moved.txt",
        "ln -s {p} l2 && cat l2",
        "echo forged > {p}",
        "echo forged >> {p}",
        "rm {p}",
    ],
)
def test_a_hidden_input_is_absent_by_every_spelling(work: Path, path: str, template: str) -> None:
    result = sh(work, template.format(p=path))
    # the link itself is a visible name: removing it is allowed and reveals nothing
    removes_link = (template, path) == ("rm {p}", "link.txt")
    assert (result.status == 0) is removes_link, (template, path, result.stdout, result.stderr)
    assert not leaked(result)
    assert (work / "tests" / "expected.txt").read_text() == SECRET + "\n"
    assert (work / "tests" / "deep" / "key.txt").read_text() == SECRET + "-deep\n"


@pytest.mark.parametrize(
    "cmdline",
    [
        "ls tests",
        "ls -a tests",
        "ls -R .",
        "ls -l tests",
        "echo tests/*",
        "echo */*.txt",
        "echo tests/*/*",
        "find .",
        "find . -name '*.txt'",
        "find tests -type f -exec cat {} +",
        "find . -type f | xargs cat",
        "grep -r SECRET .",
        "grep -rl . tests",
        "du -a .",
        "cd tests && ls && cat *",
        "cd tests; cat expected.txt",
        "for f in tests/*; do cat $f; done",
        "python3 -c \"import os; print(os.listdir('tests'))\"",
        "cat tests/*",
        "tar -cf - tests",
    ],
)
def test_listings_and_globs_leave_hidden_inputs_out(work: Path, cmdline: str) -> None:
    result = sh(work, cmdline)
    assert not leaked(result), (cmdline, result.stdout, result.stderr)
    assert "expected.txt" not in result.stdout
    assert "deep" not in result.stdout
    assert "key.txt" not in result.stdout


def test_what_is_not_hidden_stays_visible(work: Path) -> None:
    """The honest side of the fence: the rest of the directory reads as usual."""
    assert sh(work, "ls tests").stdout == "visible.txt\n"
    assert sh(work, "cat tests/visible.txt").stdout == "visible\n"
    assert sh(work, "find tests -type f").stdout == "tests/visible.txt\n"
    result = sh(work, "echo 41 > out.txt && cat out.txt")
    assert (result.status, result.stdout) == (0, "41\n")


def test_a_hidden_input_reads_as_no_such_file(work: Path) -> None:
    result = sh(work, "cat tests/expected.txt")
    assert result.stderr.endswith("No such file or directory\n"), result.stderr
    result = sh(work, "cd tests/deep")
    assert "No such file or directory" in result.stderr


def test_nothing_can_be_made_under_a_hidden_pattern(work: Path) -> None:
    for cmdline in ("mkdir tests/deep", "echo x > tests/deep", "mv tests/visible.txt tests/deep"):
        result = sh(work, cmdline)
        assert result.status != 0, cmdline
    assert (work / "tests" / "visible.txt").read_text() == "visible\n"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "tests/expected.txt"}),
        ("read_file", {"path": "./tests//expected.txt"}),
        ("read_file", {"path": "Tests/Expected.txt"}),
        ("read_file", {"path": "link.txt"}),
        ("read_file", {"path": "tests/deep/key.txt"}),
        ("write_file", {"path": "tests/expected.txt", "content": "forged\n"}),
        ("write_file", {"path": "tests/deep/new.txt", "content": "forged\n"}),
        ("list_files", {"path": "tests/deep"}),
    ],
)
def test_the_worker_s_tools_find_no_such_file(work: Path, tool: str, args: dict[str, str]) -> None:
    outcome = Toolbox(work, work / "plan.org").call(tool, args)
    assert outcome.is_error
    assert "No such file or directory" in outcome.text, outcome.text
    assert SECRET not in outcome.text
    assert (work / "tests" / "expected.txt").read_text() == SECRET + "\n"


def test_list_files_leaves_them_out(work: Path) -> None:
    outcome = Toolbox(work, work / "plan.org").call("list_files", {"path": "tests"})
    assert outcome.text == "visible.txt"


def test_a_check_on_another_thread_sees_the_hidden_input(work: Path) -> None:
    """The binding is the worker's thread's: a check running meanwhile reads the answer."""
    seen: list[sandbox.ShellResult] = []
    thread = threading.Thread(
        target=lambda: seen.append(
            sandbox.run("cat tests/expected.txt", workdir=work, read_only=True)
        )
    )
    thread.start()
    thread.join()
    assert seen[0].stdout == SECRET + "\n"
    assert sh(work, "cat tests/expected.txt").status != 0  # and still not this thread


def test_a_hidden_directory_pattern_hides_the_directory_itself(tmp_path: Path) -> None:
    root = _workdir(tmp_path)
    with fences.binding(_hiding(root, ("tests/",))):
        assert sh(root, "ls").stdout == "link.txt\nplan.org\n"
        assert sh(root, "ls tests").status != 0
        assert sh(root, "cd tests").status != 0
        assert sh(root, "cat tests/visible.txt").status != 0
        assert sh(root, "mkdir tests").status != 0
