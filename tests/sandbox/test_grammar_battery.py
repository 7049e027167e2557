"""The grammar battery: each line runs through `sandbox.run` and through /bin/bash on
identical copies of the reference tree, and must give the same status and stdout.

Only the interpreter's grammar is exercised here, with commands box.wasm already has; the
per-command batteries live with the commands' own tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.reference import assert_same

BATTERY = [
    # pipes, lists, status
    "cat a.txt | grep alpha",
    "cat a.txt | grep -v beta | sort",
    "cat words.txt | sort | uniq",
    "cat csv.txt | cut -d, -f2 | sort | head -n 2",
    "true; false",
    "false; true",
    "true && printf 'and\\n'",
    "false && printf 'not printed\\n'",
    "false || printf 'or\\n'",
    "true || printf 'not printed\\n'",
    "false && printf a || printf b",
    "true && false || printf 'recovered\\n'",
    "! grep -q zebra a.txt",
    "! true",
    "! cat a.txt | grep -q alpha",
    "grep -q zebra a.txt | true",
    "true | false",
    "cat missing.txt",
    "cat missing.txt; printf '%s\\n' $?",
    "grep -q alpha a.txt; printf '%s\\n' $?",
    "grep -q zebra a.txt; printf '%s\\n' $?",
    "false\nprintf 'next line %s\\n' $?",
    "printf a; printf b\nprintf c\n\n",
    # variables
    "X=hello; printf '%s\\n' $X",
    "X=hello; printf '%s\\n' ${X}world",
    "X='a  b'; printf '[%s]' $X; printf '\\n'",
    "X='a  b'; printf '[%s]\\n' \"$X\"",
    "X=1 Y=2; printf '%s%s\\n' $Y $X",
    "X=1; X=2; printf '%s\\n' $X",
    "printf '[%s]\\n' \"$NOPE\"",
    "printf '[%s]' $NOPE x; printf '\\n'",
    "X=1 true; printf '[%s]\\n' \"$X\"",
    "X=f.txt; printf '%s\\n' a$X ${X}b",
    "X=$(cat b.txt); printf '[%s]\\n' \"$X\"",
    # command substitution
    "printf '%s\\n' $(cat b.txt)",
    "printf '%s\\n' \"$(cat b.txt)\"",
    "printf '<%s>\\n' \"$(printf 'x\\n\\n\\n')\"",
    "printf '%s\\n' $(grep -c a a.txt) lines",
    "printf '%s\\n' $(printf '%s' $(printf nested))",
    "X=$(false); printf '%s\\n' $?",
    "printf '%s\\n' $(cat sub/c.txt | sort -r)",
    "printf '%s\\n' \"$(cut -d, -f1 csv.txt | sort)\"",
    # quoting and escapes
    "printf '%s\\n' 'single $X \"quoted\"'",
    "printf '%s\\n' \"double 'quoted' \\$X \\\"esc\\\"\"",
    "printf '%s\\n' a\\ b \\$HOME \\\\",
    "printf '%s|' 'a'\"b\"c; printf '\\n'",
    "printf '%s\\n' \"\"",
    "printf '[%s]\\n' '' \"\"",
    "printf '%s\\n' it\\'s",
    "printf '%s\\n' \"tab\there\"",
    "printf '%s\\n' one \\\n  two",
    "printf '%s\\n' $ a$ '$'",
    # comments
    "printf 'x\\n' # a comment",
    "# only a comment",
    "printf 'a#b\\n'; printf '%s\\n' a#b",
    "printf '%s\\n' \"#not\" '#comment'",
    # globs
    "printf '%s\\n' *.txt",
    "printf '%s\\n' sub/*",
    "printf '%s\\n' */*.txt",
    "printf '%s\\n' ?.txt",
    "printf '%s\\n' [ab].txt",
    "printf '%s\\n' [!ab]*.txt",
    "printf '%s\\n' *.none",
    "printf '%s\\n' '*.txt' \"*\"",
    "printf '%s\\n' \\*.txt",
    "X='*.md'; printf '%s\\n' $X \"$X\"",
    "cat *.md | grep -c tier",
    "grep -l alpha *.txt",
    # redirections
    "cat a.txt > out.txt; cat out.txt",
    "printf 'x\\n' > o.txt; printf 'y\\n' >> o.txt; cat o.txt",
    "cat a.txt > a.txt; cat a.txt",
    "cat < b.txt",
    "sort < nums.txt > sorted.txt; cat sorted.txt",
    "cat missing.txt 2> err.txt; grep -c missing err.txt",
    "cat missing.txt 2>/dev/null; printf '%s\\n' $?",
    "cat a.txt missing.txt 2>&1 | grep -c alpha",
    "cat missing.txt > both.txt 2>&1; grep -c missing both.txt",
    "cat missing.txt a.txt 2>&1",
    "cat missing.txt a.txt nope.txt > both.txt 2>&1; cat both.txt",
    "cat missing.txt a.txt 2>&1 | grep -n .",
    "cat missing.txt a.txt 2>&1 > only.txt; cat only.txt",
    "printf gone > /dev/null; printf '%s\\n' $?",
    "cat < nowhere.txt",
    "cat < nowhere.txt; printf '%s\\n' $?",
    "> created.txt; cat created.txt; printf '%s\\n' $?",
    "printf 'to\\n' >sub/new.txt; cat sub/new.txt",
    "X=out2.txt; printf 'v\\n' > $X; cat out2.txt",
    "printf 'a\\n' 1>one.txt; cat one.txt",
    # cd
    "cd sub; cat c.txt",
    "cd sub && cat inner/e.txt",
    "cd sub/inner; cat ../c.txt",
    "cd sub; cd inner; cat e.txt; cd; cat b.txt",
    "cd nowhere; printf '%s\\n' $?",
    "cd a.txt; printf '%s\\n' $?",
    "cd sub; printf '%s\\n' *",
    "cd sub; printf '%s\\n' ../*.md",
    "printf '%s\\n' $(cd sub; cat c.txt); cat b.txt",
    # builtins
    ": ignored args; printf '%s\\n' $?",
    "printf a; exit 3; printf b",
    "exit",
    "false; exit",
    # unknown commands
    "nosuchcommand; printf '%s\\n' $?",
    "nosuchcommand || printf 'fallback\\n'",
]


@pytest.mark.parametrize("cmdline", BATTERY)
def test_same_as_bash(cmdline: str, tmp_path: Path) -> None:
    assert_same(cmdline, tmp_path)


def test_battery_is_large_enough() -> None:
    assert len(BATTERY) >= 60
