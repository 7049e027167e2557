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
        ("f() { echo; }", "repeat the commands or use a for loop", 1, 1),
        ("function f { echo; }", "repeat the commands or use a for loop", 1, 1),
        ("eval 'echo a'", "write the command directly", 1, 1),
        ("sleep 1 &", "run the command in the foreground", 1, 9),
        ("for i in 1; do sleep 1 & done", "run the command in the foreground", 1, 24),
        ("select x in a; do :; done", "use a for loop", 1, 1),
        ("time ls", "run the command without it", 1, 1),
        ("echo ${X:?unset}", "for other edits pipe through sed or cut", 1, 6),
        ("echo ${X/a/b}", "for other edits pipe through sed or cut", 1, 6),
        ("echo ${arr[1]}", "'${arr[1]}' is not supported", 1, 6),
        ("echo ${#}", "'${#}' is not supported", 1, 6),
        ("for ((i=0; i<3; i++)); do :; done", "for i in $(seq 1 N)", 1, 5),
        ("for 1x in a; do :; done", "'for' needs a variable name", 1, 5),
        ("for x in a b do echo; done", "'for' without 'do'", 1, 23),
        ("for x in a; do echo", "'for' without 'done'", 1, 1),
        ("if true; then echo", "'if' without 'fi'", 1, 1),
        ("if true; echo; fi", "'if' without 'then'", 1, 16),
        ("if true; then fi", "'then' needs at least one command", 1, 1),
        ("while true; do done", "'do' needs at least one command", 1, 1),
        ("while true; echo; done", "'while' without 'do'", 1, 19),
        ("until true; do :", "'until' without 'done'", 1, 1),
        ("fi", "unexpected 'fi'", 1, 1),
        ("echo a; done", "unexpected 'done'", 1, 9),
        ("then echo", "write 'if COMMANDS; then COMMANDS; fi'", 1, 1),
        ("X=1 if true; then :; fi", "'if' must start a command", 1, 5),
        ("case x in a) echo;; ", "'case' without 'esac'", 1, 1),
        ("case x a) echo;; esac", "'case WORD' without 'in'", 1, 8),
        ("case x in a echo;; esac", "a case pattern ends with ')'", 1, 13),
        ("case x in a) echo;& esac", "';&' and ';;&' are not supported", 1, 18),
        ("{ echo a }", "'{' has no matching '}'", 1, 1),
        ("{ }", "'{ }' needs at least one command", 1, 1),
        ("( )", "'( )' needs at least one command", 1, 1),
        ("(echo a", "'(' has no matching ')'", 1, 1),
        ("echo }", None, 0, 0),
        ("[[ -f a ]", "unexpected ']' in '[[ … ]]'", 1, 9),
        ("[[ -f a", "'[[' has no matching ']]'", 1, 8),
        ("[[ a -nt b ]]", "'-nt' is not supported", 1, 6),
        ("[[ a == ]]", "'==' in '[[ … ]]' needs a word", 1, 9),
        ("[[ ]]", "it takes -n -z = ==", 1, 4),
        ("echo ]]", None, 0, 0),
        ("]]", "unexpected ']]'", 1, 1),
        ("cat <<EOF\nx\n", "here-document 'EOF' is not closed", 1, 5),
        ("cat <<EOF", "its lines start on the next line", 1, 5),
        ("cat <<$X\nx\n$X", "delimiter must be a plain word", 1, 5),
        ("cat <<", "a delimiter is missing after '<<'", 1, 7),
        ("cat <<<", "a word is missing after '<<<'", 1, 8),
        ("cat 2<<EOF\nx\nEOF", "feeds stdin only", 1, 5),
        ("echo $((1 + 2)", "end arithmetic with '))'", 1, 6),
        ("echo $((1 + 2", "unterminated '$(('", 1, 6),
        ("echo `ls", "unterminated backtick", 1, 6),
        ("echo `if`", "'if' needs at least one command", 1, 7),
        ("a ;; b", "';;' ends a case arm", 1, 3),
        ("X=(1 2)", "keep the items in a string", 1, 3),
        ("echo a && sleep 1 &", "run the command in the foreground", 1, 19),
        ("echo $[1 + 1]", "write $((…))", 1, 6),
        ("[[ $f == *.@(md|txt) ]]", "extended globs like @(a|b) are not supported", 1, 13),
        ("echo $1", "special parameter '$1'", 1, 6),
        ("echo $$", "special parameter '$$'", 1, 6),
        ("echo {a,b}", "write the words out", 1, 6),
        ("cat ~/x", "tilde expansion", 1, 5),
        ("echo 'open", "unterminated single quote", 1, 6),
        ('echo "open', "unterminated double quote", 1, 6),
        ("echo $(ls", "unterminated '$('", 1, 6),
        ("echo a |", "a command is missing", 1, 9),
        ("echo a &&", "a command is missing", 1, 10),
        ("; echo", "unexpected ';'", 1, 1),
        ("echo a ;; echo b", "';;' ends a case arm", 1, 8),
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
    text: str, fragment: str | None, line: int, column: int
) -> None:
    if fragment is None:  # a closing word that is an ordinary argument where it stands
        assert command_names(parse(text)) == ["echo"]
        return
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


def _agrees_with_the_oracle(text: str) -> None:
    """What the old grammar accepted parses to the same tree and names; the grammar has
    grown since (compound commands, `${…}` forms, here-documents), so a text the oracle
    refused may now parse, and a refusal's advice may read differently."""
    old = _outcome(*_ORACLE, text)
    new = _outcome(parse, command_names, text)
    if not (isinstance(old, tuple) and old[0] == "error"):
        assert new == old
    elif isinstance(new, tuple) and new[0] == "error":
        assert 1 <= new[2] <= text.count("\n") + 1


@settings(max_examples=1000)
@given(st.lists(st.sampled_from(_TOKENS), max_size=12), st.lists(st.sampled_from(" \t\n;|&")))
def test_lexer_parses_token_soup_as_the_oracle_does(tokens: list[str], glue: list[str]) -> None:
    text = "".join(t + (glue[i] if i < len(glue) else " ") for i, t in enumerate(tokens))
    _agrees_with_the_oracle(text)


@settings(max_examples=1000)
@given(st.text(alphabet="ab1٣ |&;$()'\"\\\n\t#*<>`{},.!=~?-_X", max_size=40))
def test_lexer_parses_character_soup_as_the_oracle_does(text: str) -> None:
    _agrees_with_the_oracle(text)


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
    _agrees_with_the_oracle(text)
