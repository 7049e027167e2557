"""The compound grammar beyond the bash battery: tree shapes, names lint sees, `$((…))` against
bash over generated expressions, errexit and `exit` inside compounds, the loop step and
fan-out limits, and xargs / find -exec refusals."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundskeeper import sandbox
from groundskeeper.sandbox import arith, command_names, parse, shell, wasi
from groundskeeper.sandbox.syntax import (
    Arith,
    ArithCommand,
    Case,
    CommandSub,
    CondBinary,
    Conditional,
    CondLogic,
    CondNot,
    CondWord,
    For,
    Group,
    If,
    Lit,
    Loop,
    Param,
    ParamOp,
    SimpleCommand,
)
from tests.sandbox.reference import make_tree


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "work")


def sh(cmdline: str, work: Path, **kwargs: object) -> sandbox.ShellResult:
    return sandbox.run(cmdline, workdir=work, **kwargs)  # type: ignore[arg-type]


def limited(cmdline: str, work: Path, timeout: float = 10.0, **limits: int) -> sandbox.ShellResult:
    return shell.run_cmdline(
        cmdline, workdir=work, read_only=False, timeout=timeout, env=None,
        limits=wasi.Limits(**limits),
    )  # fmt: skip


def only(text: str) -> object:
    """The one command of a one-command script."""
    script = parse(text)
    assert len(script.items) == 1 and not script.items[0].rest
    (command,) = script.items[0].first.commands
    return command


# ---- tree shapes ---------------------------------------------------------------------------


def test_if_keeps_each_clause_and_the_else() -> None:
    tree = only("if a; then b; elif c; then d; else e; fi > out")
    assert isinstance(tree, If)
    assert [command_names(c) + command_names(b) for c, b in tree.clauses] == [
        ["a", "b"],
        ["c", "d"],
    ]
    assert tree.otherwise is not None and command_names(tree.otherwise) == ["e"]
    assert [(r.fd, r.op) for r in tree.redirects] == [(1, ">")]


def test_for_loops_over_words_or_over_nothing() -> None:
    tree = only("for f in *.txt 'a b' $X; do cat $f; done")
    assert isinstance(tree, For) and tree.name == "f"
    assert [w.parts for w in tree.words] == [
        (Lit("*.txt", False),),
        (Lit("a b", True),),
        (Param("X", False),),
    ]
    bare = only("for f\ndo :; done")
    assert isinstance(bare, For) and bare.words == ()  # `for NAME`: no positional parameters


def test_while_and_until_are_one_loop_node() -> None:
    loop = only("until test -s f; do sleep 1; done")
    assert isinstance(loop, Loop) and loop.until
    assert command_names(loop.condition) == ["test"]
    assert not only("while :; do :; done").until  # type: ignore[attr-defined]


def test_case_arms_keep_their_patterns() -> None:
    tree = only("case $x in\n  a|'b*') echo ab;;\n  (*) ;;\nesac")
    assert isinstance(tree, Case)
    assert [[p.parts for p in arm.patterns] for arm in tree.arms] == [
        [(Lit("a", False),), (Lit("b*", True),)],
        [(Lit("*", False),)],
    ]
    assert [len(arm.body.items) for arm in tree.arms] == [1, 0]


def test_groups_and_subshells() -> None:
    brace, paren = only("{ a; b; } 2>&1"), only("(cd sub; ls)")
    assert isinstance(brace, Group) and not brace.subshell
    assert [(r.fd, r.dup_fd) for r in brace.redirects] == [(2, 1)]
    assert isinstance(paren, Group) and paren.subshell
    assert command_names(paren.body) == ["cd", "ls"]


def test_conditional_expression_tree() -> None:
    tree = only("[[ ! -f a && ( $x == y* || $v =~ ^(a|b)$ ) ]]")
    assert isinstance(tree, Conditional)
    expr = tree.expr
    assert isinstance(expr, CondLogic) and expr.op == "&&"
    assert expr.left == CondNot(CondWord("-f", expr.left.inner.word))  # type: ignore[union-attr]
    right = expr.right
    assert isinstance(right, CondLogic) and right.op == "||"
    assert isinstance(right.left, CondBinary) and right.left.op == "=="
    assert isinstance(right.right, CondBinary) and right.right.op == "=~"
    assert right.right.right.parts == (Lit("^(a|b)$", False),)
    assert only("[[ $x ]]").expr == CondWord("-n", only("[[ $x ]]").expr.word)  # type: ignore[attr-defined]
    assert only("[[ a = b ]]").expr.op == "=="  # type: ignore[attr-defined]


def test_parameter_forms() -> None:
    words = only('echo ${#X} ${X:-a b} "${X%%.*}" ${BASH_REMATCH[2]} $((1 + $Y))').words  # type: ignore[attr-defined]
    assert words[1].parts == (ParamOp("X", "len", None, False),)
    default = words[2].parts[0]
    assert isinstance(default, ParamOp) and default.op == ":-"
    assert default.arg is not None and default.arg.parts == (Lit("a b", False),)
    suffix = words[3].parts[1]
    assert isinstance(suffix, ParamOp) and (suffix.op, suffix.quoted) == ("%%", True)
    assert words[4].parts == (Param("BASH_REMATCH[2]", False),)
    arithmetic = words[5].parts[0]
    assert isinstance(arithmetic, Arith)
    assert arithmetic.expr.parts == (Lit("1 + ", True), Param("Y", True))


def test_here_documents_hold_their_bodies() -> None:
    script = parse("cat <<EOF; cat <<-'END'\nhi $X\nEOF\n\tliteral $X\n\tEND\necho after")
    first, second = (item.first.commands[0] for item in script.items[:2])
    assert isinstance(first, SimpleCommand) and isinstance(second, SimpleCommand)
    assert first.redirects[0].target.parts == (  # type: ignore[union-attr]
        Lit("", True),
        Lit("hi ", True),
        Param("X", True),
        Lit("\n", True),
    )
    assert second.redirects[0].target.parts == (Lit("literal $X\n", True),)  # type: ignore[union-attr]
    assert command_names(script) == ["cat", "cat", "echo"]


def test_backticks_are_command_substitutions() -> None:
    word = only('echo "`grep -c x f`"').words[1]  # type: ignore[attr-defined]
    sub = word.parts[1]
    assert isinstance(sub, CommandSub) and sub.quoted
    assert command_names(sub.script) == ["grep"]


def test_arithmetic_command() -> None:
    tree = only("(( i += 2 ))")
    assert isinstance(tree, ArithCommand) and tree.expr.parts == (Lit(" i += 2 ", True),)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("if nosuch; then zz; elif a; then b; else c; fi", ["nosuch", "zz", "a", "b", "c"]),
        ("for f in $(ls); do wc -l $f; done", ["ls", "wc"]),
        ("while read l; do echo $l; done < $(pick)", ["read", "echo", "pick"]),
        ("case $(id) in a) curl x;; esac", ["id", "curl"]),
        ("{ a; (b | c); }", ["a", "b", "c"]),
        ("[[ $(whoami) == root ]]", ["whoami"]),
        ("echo ${X:-$(hostname)} $((1 + $(nproc)))", ["echo", "hostname", "nproc"]),
        ("cat <<EOF\n$(uname)\nEOF", ["cat", "uname"]),
        ("echo `date`", ["echo", "date"]),
        ("ls | xargs -n 1 -I {} curl {}", ["ls", "xargs", "curl"]),
        ("xargs -0", ["xargs", "echo"]),
        ("xargs $CMD", ["xargs"]),
        ("find . -name x -exec python3 {} \\;", ["find", "python3"]),
        ("find . -exec wc -l {} + -o -ok rm {} \\;", ["find", "wc", "rm"]),
    ],
)
def test_command_names_reach_into_every_form(text: str, names: list[str]) -> None:
    assert command_names(parse(text)) == names


# ---- $((…)) against bash --------------------------------------------------------------------

_VARIABLES = {"a": "7", "b": "-3", "z": "0", "e": "a*2"}
_ATOMS = st.one_of(
    st.integers(min_value=0, max_value=99).map(str),
    st.sampled_from(["a", "b", "z", "e", "u", "0x1f", "017", "2#101"]),
)


def _expressions() -> st.SearchStrategy[str]:
    binary = ["+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&", "|",
              "^"]  # fmt: skip

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(binary), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            st.tuples(st.sampled_from(["-", "!", "~"]), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]}) ? ({t[1]}) : ({t[2]})"),
            st.tuples(inner, st.integers(0, 5)).map(lambda t: f"({t[0]}) ** {t[1]}"),
            st.tuples(inner, st.sampled_from(["<<", ">>"]), st.integers(0, 12)).map(
                lambda t: f"({t[0]}) {t[1]} {t[2]}"
            ),
            inner.map(lambda t: f"({t})"),
        )

    return st.recursive(_ATOMS, extend, max_leaves=8)


def _ours(expression: str) -> tuple[int, str]:
    variables = dict(_VARIABLES)
    try:
        value = arith.evaluate(expression, lambda n: variables.get(n, ""), variables.__setitem__)
    except arith.ArithError:
        return 1, ""
    return 0, f"{value}\n"


def _bash(expression: str) -> tuple[int, str]:
    setup = " ".join(f"{k}='{v}'" for k, v in _VARIABLES.items())
    done = subprocess.run(
        ["/bin/bash", "-c", f"{setup}; echo $(( {expression} ))"],
        capture_output=True,
        text=True,
        timeout=10,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
    )
    return done.returncode, done.stdout


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_arithmetic_evaluates_as_bash_does(expression: str) -> None:
    assert _ours(expression) == _bash(expression), expression


@pytest.mark.parametrize(
    "expression",
    ["x = 5, x += 3, x", "y = 2, y **= 3", "i = 1, i++ + ++i", "q = 9, q /= 2, q %= 3",
     "n = 1, n <<= 3, n |= 1, n ^= 2", "9223372036854775807 * 2", "-9223372036854775807 - 2",
     "1 ? 2 : 1 / 0", "0 && 1 / 0", "1 || 1 / 0", "2 ** -1", "1 / 0", "1 +", "1 ? 2", "1 1",
     "08", "64#@_", "0x", "a b", "1 = 2"],
)  # fmt: skip
def test_assignments_overflow_and_errors_as_bash(expression: str) -> None:
    assert _ours(expression) == _bash(expression), expression


# ---- errexit, exit and break inside compound commands ---------------------------------------


def test_errexit_stops_inside_a_loop_body_but_not_in_a_condition(work: Path) -> None:
    check = "if false; then echo no; fi\nfor f in a.txt missing.txt b.txt; do\n  test -s $f\ndone"
    result = sh(check, work, errexit=True, sentinel="SENT")
    assert (result.status, result.stdout, result.failed_line) == (1, "", 3)
    ok = sh("while false; do :; done\nfor f in a.txt b.txt; do test -s $f; done", work,
            errexit=True, sentinel="SENT")  # fmt: skip
    assert (ok.status, ok.stdout) == (0, "SENT\n")


def test_errexit_is_off_inside_a_group_that_is_not_last_in_its_list(work: Path) -> None:
    result = sh("{ false; echo went-on; } || echo never", work, errexit=True)
    assert (result.status, result.stdout) == (0, "went-on\n")


def test_exit_in_a_group_ends_the_line_and_the_sentinel_is_not_printed(work: Path) -> None:
    result = sh("{ echo a; exit 0; }; echo b", work, sentinel="SENT")
    assert (result.status, result.stdout) == (0, "a\n")
    subshell = sh("(echo a; exit 3); echo $?", work, sentinel="SENT")
    assert (subshell.status, subshell.stdout) == (0, "a\n3\nSENT\n")


def test_break_outside_a_loop_says_so_and_goes_on(work: Path) -> None:
    result = sh("break; echo after", work)
    assert (result.status, result.stdout) == (0, "after\n")
    assert "only meaningful in a `for', `while', or `until' loop" in result.stderr
    bad = sh("for i in 1; do break 0; done", work)
    assert bad.status == 1 and "loop count out of range" in bad.stderr


def test_read_refuses_options_it_does_not_have(work: Path) -> None:
    result = sh("read -p prompt x < a.txt", work)
    assert result.status == 2 and "unsupported option" in result.stderr


# ---- limits ---------------------------------------------------------------------------------


def test_an_endless_loop_ends_at_the_step_limit_with_the_fault_named(work: Path) -> None:
    result = limited("while true; do :; done", work, loop_steps=500)
    assert (result.status, result.fault) == (124, "loop-steps")
    assert "loop step limit (500 iterations)" in result.stderr


def test_the_default_step_limit_is_one_hundred_thousand(work: Path) -> None:
    assert wasi.Limits().loop_steps == 100_000
    result = sh("while :; do :; done", work, timeout=60)
    assert (result.status, result.fault) == (124, "loop-steps")
    assert "loop step limit (100000 iterations)" in result.stderr


def test_an_endless_loop_of_commands_ends_at_the_deadline(work: Path) -> None:
    result = sh("while true; do true; done", work, timeout=0.5)
    assert (result.status, result.fault) == (124, "deadline")
    assert "deadline of 0.5s exceeded" in result.stderr


def test_steps_count_across_all_loops_of_a_line(work: Path) -> None:
    result = limited("for i in $(seq 1 30); do for j in $(seq 1 30); do :; done; done", work,
                     loop_steps=500)  # fmt: skip
    assert (result.status, result.fault) == (124, "loop-steps")
    inside = limited("for i in $(seq 1 20); do :; done", work, loop_steps=500)
    assert (inside.status, inside.fault) == (0, None)


def test_a_million_word_loop_is_bounded(work: Path) -> None:
    result = sh("for i in $(seq 1 1000000); do :; done", work, timeout=30)
    assert result.fault in ("loop-steps", "host-memory")
    assert result.status in (124, 125)


def test_xargs_fan_out_is_bounded_with_the_fault_named(work: Path) -> None:
    result = limited("seq 1 50 | xargs -n 1 echo", work, fan_out=20)
    assert (result.status, result.fault) == (124, "fan-out")
    assert "fan-out limit (20 commands started by xargs and find -exec)" in result.stderr
    assert result.stdout == "".join(f"{i}\n" for i in range(1, 21))


def test_find_exec_fan_out_is_bounded_and_counts_with_xargs(work: Path) -> None:
    result = limited("find . -type f -exec cat {} \\;", work, fan_out=5)
    assert (result.status, result.fault) == (124, "fan-out")
    both = limited("echo a | xargs echo; find . -type f -exec true {} \\;", work, fan_out=3)
    assert both.fault == "fan-out"
    batched = limited("find . -type f -exec cat {} +", work, fan_out=1)
    assert (batched.status, batched.fault) == (0, None)
    assert wasi.Limits().fan_out == 10_000


def test_xargs_plans_lazily_so_a_huge_input_stops_at_the_bound_at_once(work: Path) -> None:
    started = time.monotonic()
    result = limited("seq 1 500000 | xargs -n 1 echo > /dev/null", work, fan_out=5)
    assert (result.status, result.fault) == (124, "fan-out")
    assert time.monotonic() - started < 20  # not millions of planned command lines first
    squeezed = limited("seq 1 500000 | xargs echo > /dev/null", work, host_memory=2**20)
    assert (squeezed.status, squeezed.fault) == (125, "host-memory")


def test_long_inputs_to_the_host_s_own_loops_stop_at_the_deadline(work: Path) -> None:
    started = time.monotonic()
    expression = sh("x=$(seq 1 400000 | tr '\\n' +)0; echo $((x))", work, timeout=1)
    assert (expression.status, expression.fault) == (124, "deadline")
    item = sh("head -c 70000 text/long.txt | tr -d '\\n ' | xargs -n 1 | wc -c", work)
    assert (item.status, item.stdout.strip()) == (0, "70001")
    assert time.monotonic() - started < 15


def test_xargs_refuses_a_replaced_line_past_the_argument_bound(work: Path) -> None:
    result = sh("head -c 70000 text/long.txt | xargs -I X echo X X", work)
    assert result.status == 1 and "xargs: argument line too long" in result.stderr


def test_a_regex_that_backtracks_is_matched_in_the_sandbox_within_the_deadline(
    work: Path,
) -> None:
    started = time.monotonic()
    result = sh("x=$(printf 'a%.0s' $(seq 1 40)); [[ ${x}c =~ ^(a|aa)*(a*)*b$ ]]", work,
                timeout=3)  # fmt: skip
    assert time.monotonic() - started < 10
    assert result.status in (1, 124)
    assert result.fault in (None, "deadline")


def test_a_glob_with_many_stars_matches_in_linear_time(work: Path) -> None:
    started = time.monotonic()
    cmdline = (
        "x=$(seq 1 3000 | tr -d '\\n'); case $x in *1*2*3*4*5*6*7*8*9*0*x) echo y;; "
        "*) echo n;; esac; [[ $x == *9*9*9*9*9*9*9*9*q ]]; echo $?"
    )
    result = sh(cmdline, work, timeout=10)
    assert (result.status, result.stdout) == (0, "n\n1\n")
    assert time.monotonic() - started < 10


def test_the_regex_stage_cannot_be_named_on_a_command_line(work: Path) -> None:
    result = sh("'[[=~' a < a.txt", work)
    assert result.status == 127 and "command not found (not in the sandbox)" in result.stderr


# ---- xargs and find -exec refusals ----------------------------------------------------------


@pytest.mark.parametrize(
    ("cmdline", "status", "message"),
    [
        ("echo a | xargs nosuch", 127, "xargs: nosuch: command not found (not in the sandbox)"),
        ("echo a | xargs cd", 126, "xargs: cd: a shell builtin cannot run under xargs"),
        ("echo a | xargs xargs", 126, "a shell builtin cannot run under xargs"),
        ("echo a | xargs -P 4 echo", 2, "xargs: unsupported option -P"),
        ("echo a | xargs -n 0 echo", 1, "value 0 for -n option should be >= 1"),
        ('echo "\'a" | xargs echo', 1, "unmatched single quote"),
        ("find . -exec nosuch {} \\;", 127, "find -exec: nosuch: command not found"),
        ("find . -exec cd {} \\;", 126, "find -exec: cd: a shell builtin cannot run"),
        ("find . -ok rm {} \\;", 2, "find: -ok is not supported in the sandbox; use -exec"),
        ("find . -execdir cat {} \\;", 2, "-execdir is not supported"),
        ("find . -exec cat {} \\; -print", 2, "'-print' after -exec is not supported"),
        ("find . -print -exec cat {} \\;", 2, "-print together with -exec is not supported"),
        ("find . -exec cat {} \\; -exec cat {} \\;", 2, "one -exec per find in the sandbox"),
        ("find . -exec cat {}", 1, "find: missing argument to `-exec'"),
    ],
)
def test_fan_out_refusals_name_the_fix(cmdline: str, status: int, message: str, work: Path) -> None:
    result = sh(cmdline, work)
    assert result.status == status, result
    assert message in result.stderr
    assert result.stdout == ""


def test_unknown_commands_under_xargs_and_exec_are_recorded_as_missing(work: Path) -> None:
    result = sh("echo a | xargs $X nosuch; find . -exec ghost {} +", work, env={"X": "-r"})
    assert result.missing == ("nosuch", "ghost")


# ---- nothing but a tree or a positioned error ------------------------------------------------

_SOUP = [
    "if", "then", "elif", "else", "fi", "for", "x", "in", "do", "done", "while", "until",
    "case", "esac", "a)", "*)", ";;", ";&", "{", "}", "(", ")", "((", "))", "[[", "]]", "!",
    "-f", "==", "=~", "^(a|b)$", "<", ">", "&&", "||", "|", ";", "\n", "&", "<<EOF", "<<-E",
    "<<'Q'", "EOF", "\tE", "Q", "<<<", "`", "`echo a`", "${X:-a b}", "${#X}", "${X%%.*}",
    "${X", "$((", "$((1+2))", "$(( x += 1 ))", "$(", "echo", "break", "read", "xargs",
    "-exec", "{}", "\\;", "+", "'q'", '"d $X"', "\\", "$X", "2>&1",
]  # fmt: skip


@settings(max_examples=300)
@given(st.lists(st.sampled_from(_SOUP), max_size=16), st.lists(st.sampled_from([" ", "\n", ""])))
def test_any_token_soup_parses_or_fails_with_a_position(tokens: list[str], glue: list[str]) -> None:
    text = "".join(t + (glue[i] if i < len(glue) else " ") for i, t in enumerate(tokens))
    try:
        script = parse(text)
    except sandbox.ShellSyntaxError as error:
        assert 1 <= error.line <= text.count("\n") + 1
        assert error.column >= 1 and error.message
        return
    names = command_names(script)
    assert all(isinstance(name, str) for name in names)


@pytest.fixture(scope="module")
def soup_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("soup"))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_SOUP), max_size=12), st.lists(st.sampled_from([" ", "\n", ""])))
def test_any_token_soup_runs_to_a_result(
    soup_work: Path, tokens: list[str], glue: list[str]
) -> None:
    """Whatever parses runs to a ShellResult (a status, maybe a named fault), never a raise;
    read-only, so the tree stays the same for every example."""
    text = "".join(t + (glue[i] if i < len(glue) else " ") for i, t in enumerate(tokens))
    root = soup_work
    result = shell.run_cmdline(
        text, workdir=root, read_only=True, timeout=0.5, env={"X": "a.b c"},
        limits=wasi.Limits(loop_steps=50, fan_out=20),
    )  # fmt: skip
    assert 0 <= result.status <= 255
    assert result.fault in (None, "syntax", "deadline", "loop-steps", "fan-out", "output")
