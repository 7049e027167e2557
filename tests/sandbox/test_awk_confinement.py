"""awk stays inside the sandbox: it never writes a file or runs a program, reads nothing
outside the workdir, and its runaway programs end at the sandbox's limits.

Refusals happen when the program is parsed, so a refused program prints nothing at all.
What bash cannot be asked (our own messages, POSIX where mawk differs) is pinned here too.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.sandbox import ShellResult, registry, shell, wasi

MiB = 1024 * 1024
SECRET = "TOP-SECRET-awk-51c2"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """tmp/outside holds the secret; tmp/work is the workdir, with a symlink pointing out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text(SECRET + "\n")
    (outside / "prog.awk").write_text('BEGIN { print "outside program" }\n')
    (tmp_path / "x").write_text(SECRET + "\n")
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("alpha 1\nbeta 2\n")
    (root / "link-file").symlink_to(outside / "x")
    return root


def files_in(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root.parent)) for p in root.parent.rglob("*"))


def run_limited(cmdline: str, work: Path, timeout: float = 10.0, **limits: int) -> ShellResult:
    return shell.run_cmdline(
        cmdline, workdir=work, read_only=False, timeout=timeout, env=None,
        limits=wasi.Limits(**limits),
    )  # fmt: skip


REFUSED = [
    ("awk '{print > \"out.txt\"}' a.txt", "output redirection (> FILE, >> FILE)"),
    ("awk '{print >> \"out.txt\"}' a.txt", "output redirection (> FILE, >> FILE)"),
    ('awk \'{printf "%s", $0 > "out.txt"}\' a.txt', "output redirection (> FILE, >> FILE)"),
    ('awk \'BEGIN{f = "out.txt"; print "x" > f}\'', "output redirection (> FILE, >> FILE)"),
    ('awk \'BEGIN{print "x" > "../out.txt"}\'', "output redirection (> FILE, >> FILE)"),
    ('awk \'BEGIN{print "x" > "/dev/stderr2"}\'', "output redirection (> FILE, >> FILE)"),
    ("awk '{print | \"cat > out.txt\"}' a.txt", "print | CMD"),
    ('awk \'{printf "x" | "sh"}\' a.txt', "print | CMD"),
    ("awk 'BEGIN{system(\"touch out.txt\")}'", "system()"),
    ("awk 'BEGIN{x = system(\"true\") + 1}'", "system()"),
    ("awk 'BEGIN{\"touch out.txt\" | getline}'", "CMD | getline"),
    ("awk 'BEGIN{\"date\" | getline now}'", "CMD | getline"),
    ("awk 'BEGIN{getline line < \"a.txt\"}'", "getline < FILE"),
    ("awk 'BEGIN{while ((getline < \"../x\") > 0) print}'", "getline < FILE"),
]


@pytest.mark.parametrize(("cmdline", "what"), REFUSED)
def test_writing_and_running_are_refused_before_anything_runs(
    cmdline: str, what: str, work: Path
) -> None:
    before = files_in(work)
    program_with_output = cmdline.replace("awk '", 'awk \'BEGIN{print "ran"} ', 1)
    for line in (cmdline, program_with_output):
        result = sandbox.run(line, workdir=work)
        assert (result.status, result.stdout, result.fault) == (2, "", None), line
        assert result.stderr.startswith(f"awk: {what} is not supported in the sandbox ("), line
        assert SECRET not in result.stderr
    assert files_in(work) == before


def test_refusal_messages_say_what_to_write_instead(work: Path) -> None:
    result = sandbox.run("awk '{print $1 > \"names.txt\"}' a.txt", workdir=work)
    assert result.stderr == (
        "awk: output redirection (> FILE, >> FILE) is not supported in the sandbox (awk writes"
        " to standard output only; redirect the whole command instead) at source line 1\n"
    )
    result = sandbox.run("awk 'BEGIN{system(\"ls\")}'", workdir=work)
    assert result.stderr == (
        "awk: system() is not supported in the sandbox (awk cannot run commands; run them in"
        " the check's command line) at source line 1\n"
    )
    result = sandbox.run("awk 'BEGIN{getline x < \"a.txt\"}'", workdir=work)
    assert "name the file as an operand and read it with getline or NR==FNR" in result.stderr


def test_the_standard_streams_are_no_files(work: Path) -> None:
    result = sandbox.run(
        'awk \'{print "bad", $1 > "/dev/stderr"; print "ok" > "/dev/stdout"}\' a.txt',
        workdir=work,
    )
    assert (result.status, result.stdout, result.stderr) == (0, "ok\nok\n", "bad alpha\nbad beta\n")
    assert sorted(p.name for p in work.iterdir()) == ["a.txt", "link-file"]


@pytest.mark.parametrize(
    "cmdline",
    [
        "awk '{print}' ../x",
        "awk '{print}' /etc/hostname",
        "awk '{print}' link-file",
        "awk 'BEGIN{ARGV[1] = \"../x\"; ARGC = 2} {print}'",
        "awk '{print}' a.txt ../x",
        "awk -f ../outside/prog.awk",
        "awk -f link-file",
        "cd .. && awk '{print}' x",
    ],
)
def test_reading_outside_the_workdir_is_refused(cmdline: str, work: Path) -> None:
    result = sandbox.run(cmdline, workdir=work)
    assert result.status != 0
    assert result.fault is None
    assert SECRET not in result.stdout + result.stderr
    assert "outside program" not in result.stdout


def test_a_missing_input_is_named_with_status_2(work: Path) -> None:
    result = sandbox.run("awk '{print}' a.txt nope.txt", workdir=work)
    assert (result.status, result.stdout) == (2, "alpha 1\nbeta 2\n")
    assert result.stderr == "awk: cannot open nope.txt (No such file or directory)\n"


def test_endless_loop_ends_at_the_deadline(work: Path) -> None:
    started = time.monotonic()
    result = sandbox.run("awk 'BEGIN{while(1);}'", workdir=work, timeout=1.0)
    assert time.monotonic() - started < 3.0
    assert (result.status, result.fault) == (124, "deadline")
    assert "deadline of 1s exceeded while running 'awk'" in result.stderr


def test_endless_loop_ends_at_the_fuel_limit(work: Path) -> None:
    result = run_limited("awk 'BEGIN{for (;;) n++}'", work, timeout=1.0, fuel_per_second=10_000_000)
    assert (result.status, result.fault) == (124, "fuel")
    assert "fuel limit exceeded while running 'awk'" in result.stderr


def test_growing_array_ends_at_the_memory_limit(work: Path) -> None:
    result = run_limited("awk 'BEGIN{while (1) a[n++] = n n n n}'", work, memory=24 * MiB)
    assert result.fault == "memory"
    assert result.status != 0
    assert "memory limit of 24 MiB a command exceeded by 'awk'" in result.stderr


def test_output_flood_ends_at_the_stream_limit(work: Path) -> None:
    result = run_limited("awk 'BEGIN{while (1) print \"flood\"}'", work, stream=1 * MiB)
    assert (result.status, result.fault) == (125, "output")
    assert len(result.stdout.encode()) <= 1 * MiB


def test_huge_input_is_read_within_the_limits(work: Path) -> None:
    line = "0123456789 abcdefghijklmnopqrstuvwxyz x\n"
    count = 12 * MiB // len(line)
    (work / "big.txt").write_text(line * count)
    started = time.monotonic()
    result = sandbox.run(
        "awk '{n += NF; s += length($2)} END{print NR, n, s}' big.txt", workdir=work
    )
    assert (result.status, result.fault, result.stderr) == (0, None, "")
    assert result.stdout == f"{count} {3 * count} {26 * count}\n"
    assert time.monotonic() - started < 10.0
    one_line = "x" * (4 * MiB)
    (work / "wide.txt").write_text(one_line + "\n")
    result = sandbox.run("awk '{print length($0), NF}' wide.txt", workdir=work)
    assert (result.status, result.stdout) == (0, f"{4 * MiB} 1\n")


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (
            "function f(n) { return n <= 0 ? 0 : 1 + f(n - 1) } BEGIN { print f(100000) }",
            "awk: function calls nested deeper than 200 (at f)\n",
        ),
        (
            "BEGIN { x = " + "(" * 300 + "1" + ")" * 300 + " }",
            "awk: program nested too deeply at source line 1\n",
        ),
        (
            "BEGIN { x = " + " ".join(['"a"'] * 1500) + " }",
            "awk: program nested too deeply at source line 1\n",
        ),
        (
            # each level is shallow, together they are not: ended by the evaluation depth
            "function f(n) { return n <= 0 ? 0 : 1 + "
            + "(" * 140
            + "f(n - 1)"
            + ")" * 140
            + " } BEGIN { print f(199) }",
            "awk: program recursion deeper than 1200 levels at source line 1\n",
        ),
    ],
)
def test_deep_recursion_is_an_error_not_a_crash(program: str, message: str, work: Path) -> None:
    result = sandbox.run(f"awk '{program}'", workdir=work)
    assert (result.status, result.fault, result.stderr) == (2, None, message)


@pytest.mark.parametrize(
    ("cmdline", "option"),
    [
        ("awk -W version", "-W"),
        ("awk --posix '{print}' a.txt", "--posix"),
        ("awk -e '{print}' a.txt", "-e"),
        ("awk -i inplace '{print}' a.txt", "-i"),
    ],
)
def test_unsupported_option_is_status_2_naming_it(cmdline: str, option: str, work: Path) -> None:
    result = sandbox.run(cmdline, workdir=work)
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == f"awk: unsupported option {option} (not in the sandbox)\n"


@pytest.mark.parametrize(
    ("cmdline", "status", "stdout", "stderr"),
    [
        # POSIX: a field past NF is the uninitialized value, equal to 0 and to "" (mawk: "")
        ("echo | awk '{print ($1 == 0), ($1 == \"\"), ($3 < 1)}'", 0, "1 1 1\n", ""),
        # rand() starts from the seed 0 every run; srand() returns the seed it replaces
        (
            "awk 'BEGIN{a = rand(); srand(0); b = rand(); print (a == b), (a >= 0 && a < 1),"
            " srand(5), srand(); srand(5); c = rand(); srand(5); print (c == rand())}'",
            0, "1 1 0 5\n1\n", "",
        ),
        # POSIX substr: characters at positions [m, m+n) that exist (mawk differs here)
        ("awk 'BEGIN{print substr(\"hello\", 0, 2) \"|\" substr(\"hello\", -1, 3) \"|\"}'",
         0, "h|h|\n", ""),
        ("awk 'BEGIN{x = 1 / 0; print \"after\"}'", 2, "",
         "awk: division by zero at source line 1\n"),
        ("awk 'BEGIN{print \"before\"; x = 5 % 0}'", 2, "before\n",
         "awk: division by zero in % at source line 1\n"),
        ("awk 'BEGIN{RS = \"ab\"} {print}' a.txt", 2, "",
         "awk: RS longer than one character is not supported in the sandbox (use one character,"
         " or \"\" for paragraphs)\n"),
        ("awk 'BEGIN{print 1' a.txt", 2, "",
         "awk: syntax error: missing } at source line 1\n"),
        ("awk '{print $1}}' a.txt", 2, "", "awk: syntax error: unexpected } at source line 1\n"),
        ("awk 'BEGIN{x = \"(\"; print (\"a\" ~ x)}'", 2, "",
         "awk: regular expression /(/: Missing ')'\n"),
        ("awk 'BEGIN{a[1] = 1; a = 2}'", 2, "",
         "awk: can't use array a in a scalar context\n"),
        ("awk 'BEGIN{f()}'", 2, "", "awk: calling undefined function f at source line 1\n"),
        (
            "awk '{print gensub(/a/, \"b\", \"g\")}'", 2, "",
            "awk: gensub() is a gawk extension, not in POSIX awk (use sub() or gsub() on a copy,"
            " or match() with substr()) at source line 1\n",
        ),
        ("awk 'BEGIN{print length(12345), 2^31, 100000 * 100000}'", 0,
         "5 2147483648 10000000000\n", ""),
        ("awk", 2, "",
         "awk: no program given\n"
         "usage: awk [-F FS] [-v NAME=VALUE]... ['PROGRAM' | -f FILE]... [FILE]...\n"),
        ("awk -v 9x=1 'BEGIN{}'", 2, "", "awk: improper assignment: -v 9x=1\n"),
    ],
)  # fmt: skip
def test_behaviour_pinned_where_mawk_is_no_reference(
    cmdline: str, status: int, stdout: str, stderr: str, work: Path
) -> None:
    result = sandbox.run(cmdline, workdir=work)
    assert (result.status, result.stdout, result.stderr) == (status, stdout, stderr)


def test_awk_is_a_box_command() -> None:
    assert "awk" in registry.BOX_COMMANDS
