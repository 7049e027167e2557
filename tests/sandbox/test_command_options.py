"""The option table lint reads (`command_options`) is what box.wasm accepts: every letter
each command is asked about, every long option it lists, `find`'s primaries, the values it
refuses — asked of the binary itself, so the table cannot drift from it. And the synopses
the author is shown name no option the table lacks."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from groundskeeper.sandbox import run
from groundskeeper.sandbox.command_options import (
    FIND_PRIMARIES,
    GRAMMARS,
    parse_options,
    supported_options,
)
from groundskeeper.sandbox.registry import BOX_COMMANDS, COMMAND_SYNOPSES

# how box.wasm says it refuses an option or a value (and nothing else it says)
REFUSED = (
    "unsupported option",
    "Perl regex",
    "takes only",
    "-[a-z]+ is not supported in the sandbox",
    "running commands is not possible",
)
GOOD_VALUE = {"color": "never", "colour": "never", "date": "@0"}


def _refusals(workdir: Path, lines: list[str]) -> list[bool]:
    """For each command line, whether the command refused an option or value."""
    script = "; ".join(
        f"{{ {line}; }} </dev/null 2>&1 | grep -qE '{'|'.join(REFUSED)}' && echo R{i} || echo A{i}"
        for i, line in enumerate(lines)
    )
    result = run(script, workdir=workdir, timeout=120)
    seen = result.stdout.split()
    assert len(seen) == len(lines), result.stderr
    return [word.startswith("R") for word in seen]


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_every_letter_is_as_the_binary_reads_it(tmp_path: Path, name: str) -> None:
    grammar = GRAMMARS[name]
    letters = string.ascii_letters + ("" if grammar.numbers else string.digits)
    refused = _refusals(tmp_path, [f"{name} -{letter}" for letter in letters])
    binary = {letter for letter, no in zip(letters, refused, strict=True) if not no}
    table = set(grammar.short.replace(":", "")) & set(letters)
    assert sorted(table) == sorted(binary)


@pytest.mark.parametrize("name", sorted(n for n in GRAMMARS if GRAMMARS[n].long))
def test_every_long_option_is_accepted_and_no_other(tmp_path: Path, name: str) -> None:
    grammar = GRAMMARS[name]
    lines = []
    for spec in grammar.long:
        option = spec.split("=")[0]
        lines.append(
            f"{name} --{option}" + (f"={GOOD_VALUE.get(option, 1)}" if "=" in spec else "")
        )
    lines.append(f"{name} --no-such-option-here")
    assert _refusals(tmp_path, lines) == [False] * len(grammar.long) + [True]


# GNU find's primaries and options the sandbox does not have: each is refused by the binary
GNU_FIND_ONLY = ["-size", "-mmin", "-mtime", "-atime", "-ctime", "-amin", "-cmin", "-perm",
                 "-user", "-group", "-regex", "-iregex", "-ls", "-printf", "-fprint", "-prune",
                 "-quit", "-links", "-inum", "-samefile", "-lname", "-executable", "-readable",
                 "-writable", "-xtype", "-follow", "-xdev", "-execdir", "-ok"]  # fmt: skip


def test_find_primaries_are_as_the_binary_reads_them(tmp_path: Path) -> None:
    takes_one = {p for p, n in FIND_PRIMARIES.items() if n == 1}
    known = [p for p in FIND_PRIMARIES if p not in ("-exec", "-delete")]
    operators = ("-a", "-and", "-o", "-or", "-not")
    lines = [
        f"find . -true {p} -true" if p in operators else f"find . {p} f" if p in takes_one
        else f"find . {p}"
        for p in known
    ]  # fmt: skip
    lines += [f"find . {p} 1" for p in GNU_FIND_ONLY]
    assert _refusals(tmp_path, lines) == [False] * len(known) + [True] * len(GNU_FIND_ONLY)
    for primary in GNU_FIND_ONLY:
        parsed = parse_options("find", [".", primary, "1"])
        assert parsed is not None and parsed.refused == ((primary, ""),)


def test_values_the_binary_refuses_are_refused(tmp_path: Path) -> None:
    assert _refusals(tmp_path, ["date -d yesterday", "date -d @0", "date --date=@5"]) == [
        True, False, False]  # fmt: skip
    parsed = parse_options("date", ["-d", "yesterday"])
    assert parsed is not None and parsed.refused[0][0] == "-d yesterday"


def test_every_box_command_is_in_the_table_or_reads_no_getopt() -> None:
    free_form = {"test", "[", "true", "false", "echo", "printf", "expr", "sleep", "awk", "jq",
                 "find"}  # fmt: skip
    assert sorted(BOX_COMMANDS - set(GRAMMARS) - free_form) == []


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_the_synopsis_names_no_option_the_table_lacks(name: str) -> None:
    for entry in COMMAND_SYNOPSES[name].options:
        first = entry.split()[0]
        for option in first.split("/"):
            if option.startswith("--"):
                word = option.split("=")[0]
            elif option.startswith("-") and len(option) > 1 and not option[1].isdigit():
                word = option[:2]
            else:
                continue
            value = "@0" if (name, word) == ("date", "-d") else "x"
            parsed = parse_options(name, [word, value])
            assert parsed is not None and parsed.refused == (), (name, entry)


def test_options_parse_as_getopt_reads_them() -> None:
    cases = {
        ("cmp", ("-n", "10", "a", "b")): (2, 3),
        ("cmp", ("--bytes=4", "a", "b")): (1, 2),
        ("diff", ("-U", "3", "a", "b")): (2, 3),
        ("diff", ("-U3", "a", "--", "-b")): (1, 3),
        ("grep", ("-qe", "x", "f")): (2,),
        ("head", ("-5", "f")): (0, 1),
        ("env", ("-i", "A=1", "-u")): (1, 2),  # options end at the first operand
    }
    for (name, words), operands in cases.items():
        parsed = parse_options(name, words)
        assert parsed is not None and parsed.operands == operands, (name, words)
    assert supported_options("diff") == "-q -u -s -U ARG"
