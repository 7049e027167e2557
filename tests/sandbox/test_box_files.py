"""The file, number and shell-utility commands of box.wasm against bash and GNU coreutils.

Each battery line runs through `sandbox.run` and through /bin/bash (LC_ALL=C) on identical
copies of the reference tree and must give the same status and stdout; commands that change
the tree print the result so that the comparison sees it. The rest pins what bash cannot be
asked for: the unsupported-option rule, SHA-256 test vectors, `[` without `]`, what WASI
cannot tell (`test -w` in a read-only run, `ls -l`), and that seq streams.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from groundskeeper import sandbox
from tests.sandbox.reference import assert_same, make_tree

BATTERY = [
    # test and [
    "test -e a.txt && test -f a.txt && test -d sub && test ! -d a.txt; echo $?",
    "test -s empty.txt; echo $?; test -s a.txt; echo $?; test -e nope; echo $?",
    "test -r a.txt && test -w a.txt; echo $?; test -x sub; echo $?; test -x a.txt; echo $?",
    "test -L a.txt; echo $?; test -z ''; echo $?; test -n ''; echo $?",
    "test abc = abc && test abc != abd && [ a '<' b ]; echo $?",
    "test 3 -eq 3 && test 2 -lt 10 && test -5 -gt -6 && test 1 -ge 1 && test 10 -le 2; echo $?",
    "test x -eq 1; echo $?; test a b; echo $?; test; echo $?; test ''; echo $?",
    "[ -e a.txt -a ! -e nope ] && [ -e nope -o -d sub ] && echo both",
    "[ \\( x = x \\) -a \\( y = z \\) ]; echo $?; [ ! \\( -e a.txt \\) ]; echo $?",
    "[ -d sub -a -f sub/c.txt ] && echo yes; [ 1 -eq 2 ] || echo no",
    # echo and printf
    "echo hello   world; echo -n no-newline; echo; echo -e 'a\\tb\\nc'",
    "echo -e 'x\\cy' z; echo -ne 'a\\0101b\\n'; echo -x; echo -E 'a\\tb'",
    "printf '%s-%s\\n' a b c; printf '%5.2s|%-4d|%x|%o|%c|%%\\n' hello 42 255 8 xyz",
    "printf '%05d|%+d|% d|%*d|%.*s\\n' 42 7 3 5 9 2 hello; printf '%d\\n' \"'A\" 0x1f 010",
    "printf '%b|%s\\n' 'a\\tb\\0101' 'a\\tb'; printf 'tab\\there\\n'",
    "printf '%.3f %e %g\\n' 3.14159 1234.5 0.0001",
    "printf '%d\\n' 3x; echo $?; printf '%s\\n'",
    # cat, head, tail
    "cat a.txt b.txt; cat -n b.txt text/nonl.txt",
    "cat -b notes.md; cat -s -E notes.md",
    "cat nope a.txt; echo $?; cat b.txt | cat - empty.txt",
    "head -n 2 a.txt; head -2 b.txt; head -c 5 a.txt; echo",
    "head -n 2 a.txt b.txt; head -q -n 1 a.txt b.txt; head -v -n 1 a.txt",
    "head -n -2 a.txt; head -c -3 b.txt; echo; head -n 0 a.txt; head -n 1K b.txt",
    "tail -n 2 a.txt; tail -2 b.txt; tail -n +3 a.txt; tail -c 6 a.txt",
    "tail a.txt b.txt; tail -c +4 b.txt; cat b.txt | tail -n 1",
    "tail -n 3 text/long.txt | cut -c1-10; tail -n 1 text/nonl.txt; echo",
    "head nope a.txt; echo $?; head -n abc a.txt; echo $?",
    # wc
    "wc a.txt b.txt; wc -l a.txt; wc -l a.txt b.txt empty.txt",
    "wc -w notes.md; wc -c a.txt; wc -lwc nope a.txt; echo $?",
    "cat a.txt | wc -l; cat a.txt | wc; wc -L a.txt text/tabs.txt; wc -m b.txt",
    # ls
    "ls; ls -1 sub; ls -a sub; ls -A",
    "ls -d sub a.txt; ls a.txt sub b.txt; ls sub/",
    "ls -R sub; ls -r; ls sub text",
    "ls nope a.txt; echo $?",
    # mkdir, touch, rm, mv, cp
    "mkdir newdir && mkdir -p x/y/z && mkdir -p sub && ls -R x newdir",
    "mkdir sub; echo $?; mkdir x/y; echo $?; mkdir -p a.txt/q; echo $?",
    "touch new.txt a.txt && wc -c new.txt a.txt && touch -c ghost && ls ghost; echo $?",
    "rm a.txt && ls; rm nope; echo $?; rm -f nope; echo $?",
    "rm sub; echo $?; rm -r sub && ls; rm -rf text nope && ls",
    "rm -r .; echo $?; rm -d sub/inner; echo $?; rm -rf sub/inner && ls sub",
    "mv a.txt z.txt && cat z.txt && ls",
    "mv a.txt b.txt sub && ls sub; mv nope x; echo $?",
    "mv sub moved && ls -R moved; mv b.txt notdir/x; echo $?",
    "cp a.txt copy.txt && cmp a.txt copy.txt && echo same; cp a.txt sub && ls sub",
    "cp sub x; echo $?; cp -r sub x && ls -R x && cat x/inner/e.txt",
    "cp -r sub text && ls -R text; cp a.txt a.txt; echo $?",
    # seq, sleep, basename, dirname, env, expr
    "seq 5; seq 3 7; seq 10 -3 1; seq -s, 3",
    "seq -w 1 10; seq -w -1 1; seq 1 0.5 3; seq 0 0.1 1 | tail -n 2",
    "seq 5 1; echo $?; seq 1 0 3; echo $?; seq x; echo $?; seq -5 -3",
    "seq 1000 | tail -n 1; seq 100000 | wc -l; seq -f '%03g' 3",
    "sleep 0.05 && echo slept; sleep 0; echo $?; sleep x; echo $?",
    "basename /a/b/; basename a.txt .txt; basename -a x/y z/w; basename -s .c a.c b.c",
    "dirname a/b/c; dirname a; dirname /a; dirname a/b/ x//y",
    "env -i A=1 B=2",
    "expr 1 + 2; expr 3 \\* 4 - 1; expr 100 / 7 / 2; expr -5 % 3",
    "expr abc : 'a\\(.\\)'; expr abc : 'a.'; expr foo.txt : '\\(.*\\)\\.txt'",
    "expr length hello; expr substr hello 2 3; expr index hello l; expr 2 '<' 10",
    "expr 0; echo $?; expr ''; echo $?; expr 1 + a; echo $?; expr 5 / 0; echo $?",
    "expr 1 '|' 0; expr 0 '&' 1; expr x = x; expr 1 = 1.0; expr 1 2; echo $?",
    # find
    "find . -name '*.txt' | sort",
    "find sub | sort; find sub/ -type d",
    "find . -type f -name '*.log'; find . -maxdepth 1 -type d | sort",
    "find . -mindepth 2 | sort; find sub -maxdepth 0",
    "find . -name '*.log' -o -name '*.md' | sort; find . ! -name '*.txt' -type f | sort",
    "find . \\( -name a.txt -o -name b.txt \\) -print | sort; find . -iname 'A.TXT'",
    "find . -path './sub/*' | sort; find . -empty",
    "find nope; echo $?; find . -name '*.log' -delete; find . -name '*.log'",
    # sha256sum, cmp
    "sha256sum a.txt b.txt empty.txt text/long.txt",
    "cat a.txt | sha256sum; sha256sum nope a.txt; echo $?",
    "sha256sum a.txt b.txt > sums && sha256sum -c sums; echo x >> b.txt; sha256sum -c sums",
    "cmp a.txt a.txt; echo $?; cmp a.txt b.txt; echo $?; cmp -s a.txt b.txt; echo $?",
    "cmp text/new.txt text/old.txt; cmp -l a.txt words.txt; cmp -b a.txt b.txt",
    "cmp a.txt nope; echo $?; cmp empty.txt a.txt; echo $?; cat a.txt | cmp - a.txt",
]


@pytest.mark.parametrize("cmdline", BATTERY)
def test_matches_bash(cmdline: str, tmp_path: Path) -> None:
    assert_same(cmdline, tmp_path)


def test_battery_is_big_enough() -> None:
    assert len(BATTERY) >= 35


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree")


UNSUPPORTED = [
    ("cat -v a.txt", "-v"),
    ("head -z a.txt", "-z"),
    ("tail -f a.txt", "-f"),
    ("wc --files0-from=x", "--files0-from=x"),
    ("ls -C", "-C"),
    ("mkdir -m 700 d", "-m"),
    ("cp -l a.txt d.txt", "-l"),
    ("mv -i a.txt d.txt", "-i"),
    ("rm -i a.txt", "-i"),
    ("touch -d yesterday a.txt", "-d"),
    ("seq -t 3", "-t"),
    ("sleep -q 1", "-q"),
    ("basename -z a", "-z"),
    ("dirname --help a", "--help"),
    ("pwd -Q", "-Q"),
    ("env -S x", "-S"),
    ("find . -size 1", "-size"),
    ("sha256sum --tag a.txt", "--tag"),
    ("cmp -i 1 a.txt b.txt", "-i"),
    ("printf -v x y", "-v"),
    ("expr --help", "--help"),
]


@pytest.mark.parametrize(("cmdline", "option"), UNSUPPORTED)
def test_unsupported_option_is_status_2_naming_it(tree: Path, cmdline: str, option: str) -> None:
    result = sandbox.run(cmdline, workdir=tree)
    assert result.status == 2
    assert f"unsupported option {option} (not in the sandbox)" in result.stderr
    assert result.stdout == ""


def test_unsupported_test_operator_is_status_2(tree: Path) -> None:
    result = sandbox.run("test -k a.txt", workdir=tree)
    assert (result.status, result.stderr) == (
        2,
        "test: unsupported operator -k (not in the sandbox)\n",
    )


def test_find_exec_runs_commands_and_ok_is_refused(tree: Path) -> None:
    # the host shell carries -exec out (each command a stage of its own): the C side's own
    # refusal stays as a backstop for a find that reaches it with -exec still in its words
    result = sandbox.run("find . -name a.txt -exec cat {} ';'", workdir=tree)
    assert (result.status, result.stdout) == (0, (tree / "a.txt").read_text())
    refused = sandbox.run("find . -ok cat {} ';'", workdir=tree)
    assert refused.status == 2
    assert "find: -ok is not supported in the sandbox; use -exec" in refused.stderr


def test_env_running_a_command_is_an_explicit_error(tree: Path) -> None:
    result = sandbox.run("env A=1 echo hi", workdir=tree)
    assert result.status == 125
    assert result.stdout == ""
    assert "cannot run 'echo'" in result.stderr


def test_bracket_without_closing_bracket_is_status_2(tree: Path) -> None:
    result = sandbox.run("[ -f a.txt", workdir=tree)
    assert (result.status, result.stdout, result.stderr) == (2, "", "[: missing `]'\n")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"abc",
        b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        b"x" * 55,
        b"x" * 56,
        b"x" * 64,
        bytes(range(256)) * 41,
    ],
)
def test_sha256_matches_known_digests(tree: Path, data: bytes) -> None:
    (tree / "blob").write_bytes(data)
    result = sandbox.run("sha256sum blob; sha256sum < blob", workdir=tree)
    digest = hashlib.sha256(data).hexdigest()
    assert result.stdout == f"{digest}  blob\n{digest}  -\n"


def test_sha256_fips_vector_abc(tree: Path) -> None:
    result = sandbox.run("printf abc | sha256sum", workdir=tree)
    assert result.stdout == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n"
    )


def test_sha256sum_check_reports_each_failure(tree: Path) -> None:
    good = hashlib.sha256((tree / "a.txt").read_bytes()).hexdigest()
    (tree / "sums").write_text(f"{good}  a.txt\n{'0' * 64}  b.txt\n{'0' * 64}  nope\n")
    result = sandbox.run("sha256sum -c sums", workdir=tree)
    assert result.status == 1
    assert result.stdout == "a.txt: OK\nb.txt: FAILED\nnope: FAILED open or read\n"
    assert "WARNING: 1 computed checksum did NOT match" in result.stderr
    assert "WARNING: 1 listed file could not be read" in result.stderr


def test_test_w_is_false_in_a_read_only_run(tree: Path) -> None:
    line = "test -w a.txt; echo $?; test -w sub; echo $?; test -r a.txt; echo $?"
    assert sandbox.run(line, workdir=tree).stdout == "0\n0\n0\n"
    assert sandbox.run(line, workdir=tree, read_only=True).stdout == "1\n1\n0\n"


def test_ls_long_shows_what_wasi_knows(tree: Path) -> None:
    result = sandbox.run("ls -l sub", workdir=tree)
    lines = result.stdout.splitlines()
    assert result.status == 0
    assert lines[0] == "total 12"
    # no permission bits or owners in WASI: those columns are left out, never guessed; the
    # type, link count, real size, time and name are there
    assert re.fullmatch(r"- 1   10 \w{3} [ \d]\d [\d:]{5} c\.txt", lines[1]), lines[1]
    assert re.fullmatch(r"d 2 \d+ \w{3} [ \d]\d [\d:]{5} inner", lines[3]), lines[3]
    assert "?" not in result.stdout


def test_pwd_is_relative_to_the_workdir_root(tree: Path) -> None:
    result = sandbox.run("pwd; cd sub/inner && pwd", workdir=tree)
    assert result.stdout == "/workdir\n/workdir/sub/inner\n"


def test_expr_overflow_is_an_error_not_a_wrong_answer(tree: Path) -> None:
    result = sandbox.run("expr 9223372036854775807 + 1", workdir=tree)
    assert (result.status, result.stdout, result.stderr) == (2, "", "expr: integer overflow\n")


def test_seq_streams_until_a_limit_stops_it(tree: Path) -> None:
    result = sandbox.run("seq 1 100000000000", workdir=tree, timeout=5.0)
    # a seq that buffered everything would print nothing before the limit ended it
    assert result.status != 0
    assert result.fault is not None
    assert result.stdout.startswith("1\n2\n3\n4\n5\n")
    assert len(result.stdout) > 1_000_000


def test_cp_refuses_to_copy_a_directory_into_itself(tree: Path) -> None:
    result = sandbox.run("cp -r sub sub/inner; echo $?; ls sub/inner", workdir=tree)
    assert result.stdout == "1\ne.txt\n"
    assert "cannot copy a directory, 'sub', into itself, 'sub/inner/sub'" in result.stderr
