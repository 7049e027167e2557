"""The sandbox grammar: what parses, what is refused by name, and the registry."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import groundskeeper.sandbox as sandbox
from groundskeeper.errors import GroundskeeperError
from groundskeeper.sandbox import COMMANDS, ShellSyntaxError, command_names, parse
from groundskeeper.sandbox.registry import BOX_COMMANDS, BUILTINS, PYTHON_COMMANDS
from groundskeeper.sandbox.syntax import CommandSub, Lit, Param, Script
from tests.sandbox import syntax_oracle

BOX_H = Path(sandbox.__file__).parent / "box" / "box.h"


@pytest.mark.parametrize(
    ("text", "fragment", "line", "column"),
    [
        ("if true; then echo y; fi", "'if' is not supported", 1, 1),
        ("echo a\nfor x in a; do echo; done", "'for' loops", 2, 1),
        ("while true; do :; done", "'while' loops", 1, 1),
        ("f() { echo; }", "function definitions", 1, 1),
        ("function f { echo; }", "function definitions", 1, 1),
        ("sleep 1 &", "background jobs '&'", 1, 9),
        ("cat <<EOF\nx\nEOF", "here-documents", 1, 5),
        ("cat <<< word", "here-strings", 1, 5),
        ("echo $((1 + 2))", "arithmetic '$((…))'", 1, 6),
        ("echo `ls`", "backticks", 1, 6),
        ("(cd sub; ls)", "subshells", 1, 1),
        ("{ echo; }", "command groups", 1, 1),
        ("[[ -f a ]]", "'[[ … ]]'", 1, 1),
        ("case x in x) ;; esac", "'case'", 1, 1),
        ("echo ${X:-default}", "'${X:-default}' is not supported", 1, 6),
        ("echo $1", "special parameter '$1'", 1, 6),
        ("echo $$", "special parameter '$$'", 1, 6),
        ("echo {a,b}", "brace expansion", 1, 6),
        ("cat ~/x", "tilde expansion", 1, 5),
        ("echo 'open", "unterminated single quote", 1, 6),
        ('echo "open', "unterminated double quote", 1, 6),
        ("echo $(ls", "unterminated '$('", 1, 6),
        ("echo a |", "a command is missing", 1, 9),
        ("echo a &&", "a command is missing", 1, 10),
        ("; echo", "unexpected ';'", 1, 1),
        ("echo a ;; echo b", "';;'", 1, 8),
        ("echo a |& cat", "'|&'", 1, 8),
        ("echo a &> f", "'&>'", 1, 8),
        ("echo a 3> f", "file descriptor 3", 1, 8),
        ("echo a >", "a file name is missing after '>'", 1, 9),
        ("cat <(ls)", "process substitution", 1, 5),
        ("echo a)", "unexpected ')'", 1, 7),
        ("X=(1 2)", "arrays", 1, 3),
    ],
)
def test_outside_the_grammar_is_a_named_error(
    text: str, fragment: str, line: int, column: int
) -> None:
    with pytest.raises(ShellSyntaxError) as caught:
        parse(text)
    assert fragment in caught.value.message
    assert (caught.value.line, caught.value.column) == (line, column)
    assert isinstance(caught.value, GroundskeeperError)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("", []),
        ("# only a comment\n\n", []),
        ("true", ["true"]),
        ("echo a | wc -l && cat f || ! false; ls", ["echo", "wc", "cat", "false", "ls"]),
        ("test $(wc -l < f) -ge 2", ["test", "wc"]),
        ("X=$(cat f) echo $(ls $(pwd))", ["cat", "echo", "ls", "pwd"]),
        ('echo "$(grep -c x f)"', ["echo", "grep"]),
        ("$CMD arg; 'ls' -l; \\cat f", ["ls", "cat"]),
        ("X=1; Y=2", []),
        ("> out.txt", []),
        ("echo a >$(basename f)", ["echo", "basename"]),
        ("[ -f a ] && echo if", ["[", "echo"]),
        ("echo a \\\n  b # comment; rm x", ["echo"]),
        ("curl x | bash", ["curl", "bash"]),
    ],
)
def test_command_names_in_source_order(text: str, names: list[str]) -> None:
    assert command_names(parse(text)) == names


def test_words_keep_quoting_so_globs_and_splitting_can_tell() -> None:
    script = parse("""echo *.txt '*.txt' "a $X b" $?""")
    words = script.items[0].first.commands[0].words
    assert words[1].parts == (Lit("*.txt", quoted=False),)
    assert words[1].has_glob() and not words[2].has_glob()
    assert words[2].parts == (Lit("*.txt", quoted=True),)
    assert words[3].parts == (
        Lit("", quoted=True),
        Lit("a ", quoted=True),
        Param("X", quoted=True),
        Lit(" b", quoted=True),
    )
    assert words[4].parts == (Param("?", quoted=False),)


def test_structure_of_lists_pipelines_and_redirections() -> None:
    script = parse("! cat < in 2>&1 | wc -l >> out && echo $(ls)\necho b")
    assert len(script.items) == 2
    first = script.items[0]
    assert first.first.negated
    cat, wc = first.first.commands
    assert [(r.fd, r.op, r.dup_fd) for r in cat.redirects] == [(0, "<", None), (2, ">&", 1)]
    assert [(r.fd, r.op) for r in wc.redirects] == [(1, ">>")]
    assert [op for op, _ in first.rest] == ["&&"]
    echo = first.rest[0][1].commands[0]
    assert isinstance(echo.words[1].parts[0], CommandSub)


def test_trees_compare_and_hash_by_value_and_kind() -> None:
    first, second = parse("echo $X 'y' | wc -l"), parse("echo $X 'y' | wc -l")
    assert first is not second
    assert first == second
    assert {first: "seen"}[second] == "seen"
    assert first != parse("echo $X 'z' | wc -l")
    assert Lit("X", quoted=True) != Param("X", quoted=True)
    assert repr(Lit("a", quoted=False)) == "Lit(text='a', quoted=False)"


def test_reserved_words_only_in_command_position() -> None:
    assert command_names(parse("echo if then fi done")) == ["echo"]
    assert command_names(parse("'if' x")) == ["if"]


def test_registry_matches_box_h() -> None:
    text = BOX_H.read_text()
    block = re.search(r"#define BOX_COMMANDS\(X\)(.*?)\n\n", text, re.S)
    assert block is not None
    in_header = set(re.findall(r"X\((\w+)\)", block.group(1)))
    assert in_header | {"["} == set(BOX_COMMANDS)
    assert COMMANDS == BOX_COMMANDS | BUILTINS | PYTHON_COMMANDS
    assert {"cd", "curl", "bash", "python3", "python", "pip"} & COMMANDS == {
        "cd",
        "python3",
        "python",
    }


_SAFE = st.text(alphabet=st.characters(blacklist_characters="'\0"), min_size=1, max_size=20)


@given(st.lists(_SAFE, min_size=1, max_size=5))
def test_single_quoted_words_come_back_verbatim(words: list[str]) -> None:
    text = "printf " + " ".join(f"'{word}'" for word in words)
    command = parse(text).items[0].first.commands[0]
    assert [w.literal() for w in command.words[1:]] == words
    assert not any(w.has_glob() for w in command.words)


@given(st.text(alphabet="ab|&;$()'\"\\ \n#*<>`{}!=", max_size=30))
def test_parse_returns_a_script_or_a_positioned_syntax_error(text: str) -> None:
    try:
        parse(text)
    except ShellSyntaxError as error:
        assert 1 <= error.line <= text.count("\n") + 1
        assert error.column >= 1
        assert error.message


# ---- the run-at-a-time lexer against the character-at-a-time oracle ------------------------

_TOKENS = [
    "echo", "test", "-s", "f", "a.txt", "if", "for", "{", "}", "[[", "X=1", "X=", "Y=a$X",
    "$X", "${X}", "${X:-d}", "$?", "$1", "$$", "$", "$(", "$((", ")", "(", "'a b'", "'",
    '"a $X b"', '"', '"\\"$(ls)\\""', "\\", "\\\n", "\\$", "2>&1", "2>&3", ">&-", ">", ">>", "<",
    "<<", "<&", ">|", "<(", "1>", "3>", "٣>", "|", "||", "|&", "&&", "&", "&>", ";", ";;", "\n",
    "!", "! !", "#c", "a#b", "{a,b}", "a{1..3}", "~", "~/x", "*.txt", "`ls`", "é", "\t", " ",
    "f()", "x=(1)", "!\t", "\t!", '"\\$X \\\\ \\` \\a \\\n"', '"$?${X}$"', "'\\'", "\\'",
]  # fmt: skip


_ORACLE = (syntax_oracle.parse, syntax_oracle.command_names)


def _outcome(
    parser: Callable[[str], Script], names: Callable[[Script], list[str]], text: str
) -> object:
    try:
        script = parser(text)
    except ShellSyntaxError as error:
        return ("error", error.message, error.line, error.column)
    return script, names(script)


@settings(max_examples=1000)
@given(st.lists(st.sampled_from(_TOKENS), max_size=12), st.lists(st.sampled_from(" \t\n;|&")))
def test_lexer_parses_token_soup_as_the_oracle_does(tokens: list[str], glue: list[str]) -> None:
    text = "".join(t + (glue[i] if i < len(glue) else " ") for i, t in enumerate(tokens))
    assert _outcome(parse, command_names, text) == _outcome(*_ORACLE, text)


@settings(max_examples=1000)
@given(st.text(alphabet="ab1٣ |&;$()'\"\\\n\t#*<>`{},.!=~?-_X", max_size=40))
def test_lexer_parses_character_soup_as_the_oracle_does(text: str) -> None:
    assert _outcome(parse, command_names, text) == _outcome(*_ORACLE, text)


_FRAGMENTS = [
    "a", "-s", "x.txt", "*.md", "=", "X=", "2", "é", "#", "a#", "$", "'q q'", "''", '""',
    '"d $X \\$ \\\\ \\" \\` \\a \\\n $"', "$X", "${Y}", "$?", "$(echo a)", "$(a | b && c)",
    "\\ ", "\\\n", "\\a", "\\$", "{", "}", "{x}", "a,b", "!",
]  # fmt: skip
_WORDS = st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=3).map("".join)
_REDIRECTIONS = st.sampled_from(["", "> o", "2>&1", "<i", ">>o 2> e", "1>&2", ">$(r) <$(s)"])
_COMMANDS = st.builds(
    lambda words, before, after: " ".join([before, *words, after]),
    st.lists(_WORDS, min_size=1, max_size=4),
    _REDIRECTIONS,
    _REDIRECTIONS,
)


@settings(max_examples=1000)
@given(st.lists(st.tuples(_COMMANDS, st.sampled_from([" | ", " && ", " || ", "; ", "\n", " ! "]))))
def test_lexer_parses_well_formed_lines_as_the_oracle_does(
    commands: list[tuple[str, str]],
) -> None:
    text = "".join(command + operator for command, operator in commands)
    assert _outcome(parse, command_names, text) == _outcome(*_ORACLE, text)
