"""The text commands of box.wasm (grep, sed, sort, uniq, cut, tr, diff) against GNU.

Each battery line runs through `sandbox.run` and through /bin/bash (LC_ALL=C) on identical
copies of the reference tree and must give the same status and stdout. The rest pins what
bash cannot be asked for: the unsupported-option rule, grep's statuses, diff's hunks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper import sandbox
from tests.sandbox.reference import assert_same, make_tree

BATTERY = [
    # grep
    "grep alpha a.txt",
    "grep -c a a.txt",
    "grep -n beta a.txt b.txt",
    "grep -v -e alpha -e gamma a.txt",
    "grep -i -x apple words.txt",
    "grep -w app words.txt; grep -w apple words.txt",
    "grep -E 'ban|cher' words.txt",
    "grep 'ban\\|cher' words.txt",
    "grep -F 'a.' a.txt; grep -c 'a.' a.txt",
    "grep -l alpha a.txt b.txt words.txt",
    "grep -o 'p[a-z]' words.txt",
    "grep -rn e sub | sort",
    "grep -r x= sub",
    "grep -E '(p)\\1' words.txt",
    "grep -F '$150' notes.md",
    "grep -c ab, text/long.txt",
    "grep -n -C1 beta a.txt; grep -A1 e a.txt b.txt",
    "grep -B1 -n o b.txt words.txt; grep -m1 -A2 alpha a.txt",
    "grep --color=never -o -A1 a a.txt",
    # sed
    "sed 's/a/X/g' a.txt",
    "sed 's/a/X/2' a.txt",
    "sed -n '/alpha/,/gamma/p' a.txt",
    "sed -n '2,$p' a.txt; sed '$d' b.txt",
    "sed '2!d' a.txt",
    "sed 's#\\(al\\)\\(pha\\)#\\2\\1#' a.txt",
    "sed -E 's/^([^,]*),([^,]*),.*/\\2 \\1/' csv.txt",
    "sed 's/e*/-/g' b.txt",
    "sed -e 's/one/1/' -e 's/two/2/;s/three/3/' b.txt",
    "sed -n '/Pro/s/\\$\\([0-9]*\\)/\\1 USD/p' notes.md",
    "sed = b.txt; sed 2q b.txt",
    "sed = b.txt | sed 'N;s/\\n/ /'",
    "sed '$!N;/^\\(.*\\)\\n\\1$/!P;D' text/dups.txt",
    "sed -n '1h;1!H;${x;s/\\n/,/g;p}' b.txt; sed '1!G;h;$!d' a.txt",
    "sed -n '/alpha/{s/a/A/g;p}' a.txt",
    "sed p text/nonl.txt",
    "sed 's/ab,/x/g' text/long.txt | cut -c1-5",
    # sort
    "sort words.txt",
    "sort -r words.txt; sort -f words.txt",
    "sort -u words.txt",
    "sort -n nums.txt; sort -rn nums.txt",
    "sort -n text/mixed.txt",
    "sort -t, -k2,2n csv.txt",
    "sort -t, -k3,3 -k1,1r csv.txt",
    "sort -k2 words.txt",
    "sort text/mixed.txt | sort -c; sort -c words.txt",
    # uniq
    "uniq text/dups.txt",
    "uniq -c text/dups.txt",
    "uniq -d text/dups.txt; uniq -u text/dups.txt",
    "uniq -ic text/dups.txt",
    "sort words.txt | uniq -c",
    "sort text/dups.txt | uniq -c | sort -rn",
    # cut
    "cut -d, -f2 csv.txt | sort -n",
    "cut -d, -f1,3 csv.txt",
    "cut -d, -f2- csv.txt; cut -d, -f-2 csv.txt",
    "cut -f2 text/tabs.txt; cut -s -f2 text/tabs.txt",
    "cut -c1-3 a.txt; cut -c2,4- a.txt",
    "cut -d' ' -f2 words.txt",
    "cut -d, -f3 csv.txt | sort | uniq -c",
    "cut -d, -f39999- text/long.txt",
    # tr
    "tr a-z A-Z < a.txt",
    "tr '[:lower:]' '[:upper:]' < words.txt",
    "tr -d '[:digit:]' < csv.txt",
    "tr -s '\\n' < notes.md",
    "tr ' ' '\\n' < words.txt | sort | uniq -c",
    "tr -cs '[:alpha:]' '\\n' < notes.md",
    "tr -cd '[:alnum:]\\n' < notes.md",
    "tr abc xy < a.txt",
    "cat csv.txt | tr , '\\t' | cut -f2",
    # diff
    "diff a.txt a.txt",
    "diff a.txt b.txt",
    "diff text/old.txt text/new.txt",
    "diff text/nonl.txt b.txt",
    "diff empty.txt b.txt; diff b.txt empty.txt",
    "diff -q a.txt b.txt",
    "diff -q a.txt a.txt",
    "diff a.txt missing.txt",
]


@pytest.mark.parametrize("cmdline", BATTERY)
def test_battery_matches_bash(cmdline: str, tmp_path: Path) -> None:
    assert_same(cmdline, tmp_path)


def test_battery_is_big_enough() -> None:
    assert len(BATTERY) >= 35


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path)


@pytest.mark.parametrize(
    ("cmdline", "option"),
    [
        ("grep --color=always alpha a.txt", "--color=always"),
        ("grep -z alpha a.txt", "-z"),
        ("sed -f script.sed a.txt", "-f"),
        ("sort -g nums.txt", "-g"),
        ("sort -V nums.txt", "-V"),
        ("uniq -z a.txt", "-z"),
        ("cut -z -f1 a.txt", "-z"),
        ("tr -x a b", "-x"),
        ("diff -y a.txt b.txt", "-y"),
        ("diff --recursive sub sub", "--recursive"),
    ],
)
def test_unsupported_option_is_status_2_naming_it(tree: Path, cmdline: str, option: str) -> None:
    name = cmdline.split()[0]
    result = sandbox.run(cmdline, workdir=tree)
    assert result.status == 2
    assert result.stdout == ""
    assert result.stderr == f"{name}: unsupported option {option} (not in the sandbox)\n"


def test_grep_p_is_refused_naming_e(tree: Path) -> None:
    result = sandbox.run("grep -P '\\d+' a.txt", workdir=tree)
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        "grep: -P (Perl regex) is not supported in the sandbox; use -E (POSIX extended regex)\n"
    )
    assert sandbox.run("grep --perl-regexp x a.txt", workdir=tree).stderr == result.stderr


@pytest.mark.parametrize(
    ("cmdline", "status"),
    [
        ("grep -q alpha a.txt", 0),
        ("grep -q zebra a.txt", 1),
        ("grep alpha missing.txt", 2),
        ("grep alpha missing.txt a.txt", 2),  # a match does not hide the trouble
        ("grep -q alpha missing.txt a.txt", 0),  # ...except under -q, as in GNU
        ("grep -s zebra missing.txt", 2),  # -s silences the message, not the status
        ("grep alpha sub", 2),  # a directory without -r
        ("grep 'a\\(' a.txt", 2),  # a bad regex
        ("grep -c zebra a.txt", 1),
        ("grep -v zebra empty.txt", 1),
    ],
)
def test_grep_exit_status(tree: Path, cmdline: str, status: int) -> None:
    assert sandbox.run(cmdline, workdir=tree).status == status


def test_grep_missing_file_is_named(tree: Path) -> None:
    result = sandbox.run("grep -s alpha missing.txt; grep alpha missing.txt", workdir=tree)
    assert result.stderr == "grep: missing.txt: No such file or directory\n"


def test_grep_r_prefixes_paths_and_counts_every_file(tree: Path) -> None:
    result = sandbox.run("grep -rc e sub", workdir=tree)
    assert result.status == 0
    assert sorted(result.stdout.splitlines()) == [
        "sub/c.txt:2",
        "sub/d.log:0",
        "sub/inner/e.txt:1",
    ]


def test_diff_unified_hunks_on_a_known_pair(tree: Path) -> None:
    result = sandbox.run("diff -u text/old.txt text/new.txt", workdir=tree)
    assert result.status == 1
    # The sandbox's headers carry no timestamps (GNU appends one after a tab).
    assert result.stdout == (
        "--- text/old.txt\n"
        "+++ text/new.txt\n"
        "@@ -1,6 +1,6 @@\n"
        " line 1\n line 2\n-line 3\n+LINE 3\n line 4\n line 5\n line 6\n"
        "@@ -9,12 +9,12 @@\n"
        " line 9\n line 10\n line 11\n-line 12\n+LINE 12\n line 13\n line 14\n line 15\n"
        " line 16\n-line 17\n line 18\n line 19\n line 20\n+line 21\n"
    )


def test_diff_unified_hunks_equal_gnus(tree: Path, tmp_path: Path) -> None:
    """Everything but GNU's header timestamps is byte-for-byte GNU's output."""
    from tests.sandbox.reference import run_bash

    cmdline = "diff -U 2 text/old.txt text/new.txt; diff -u text/nonl.txt b.txt"
    ours = sandbox.run(cmdline, workdir=tree)
    ref = run_bash(cmdline, make_tree(tmp_path / "bash"))
    strip = [line.split("\t")[0] for line in ref.stdout.splitlines()]
    assert ours.stdout.splitlines() == strip
    assert "\\ No newline at end of file" in ours.stdout


@pytest.mark.parametrize(
    ("cmdline", "status", "stdout"),
    [
        ("diff -q a.txt a.txt", 0, ""),
        ("diff -q a.txt b.txt", 1, "Files a.txt and b.txt differ\n"),
        ("diff -u a.txt a.txt", 0, ""),
        ("diff a.txt missing.txt", 2, ""),
        ("diff a.txt", 2, ""),
    ],
)
def test_diff_statuses(tree: Path, cmdline: str, status: int, stdout: str) -> None:
    result = sandbox.run(cmdline, workdir=tree)
    assert (result.status, result.stdout) == (status, stdout)


def test_diff_is_an_lcs_not_a_line_by_line_compare(tree: Path) -> None:
    """One line inserted at the top is one `+`, not every line reported as changed."""
    (tree / "shifted.txt").write_text("new first\n" + (tree / "text/old.txt").read_text())
    result = sandbox.run("diff -u text/old.txt shifted.txt", workdir=tree)
    changed = [
        line
        for line in result.stdout.splitlines()
        if line[:1] in "+-" and not line.startswith(("---", "+++"))
    ]
    assert changed == ["+new first"]
    assert "@@ -1,3 +1,4 @@" in result.stdout


def test_long_lines_are_not_truncated(tree: Path) -> None:
    result = sandbox.run(
        "sort text/long.txt | cut -c1-3; grep -c x text/long.txt; "
        "sed 's/x/y/g' text/long.txt | tr -d '\\n' | cut -c119999-120003",
        workdir=tree,
    )
    assert result.status == 0
    assert result.stdout.splitlines() == ["ab,", "xxx", "1", "b,yyy"]


def test_script_errors_are_not_silent(tree: Path) -> None:
    result = sandbox.run("sed 's/a/b' a.txt", workdir=tree)
    assert result.status == 1
    assert "unterminated `s' command" in result.stderr
    result = sandbox.run("sed 'y/ab/x/' a.txt", workdir=tree)
    assert result.status == 1
    result = sandbox.run("sed 'b end' a.txt", workdir=tree)
    assert result.status == 2
    assert "unsupported command `b'" in result.stderr
