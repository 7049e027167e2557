"""Which options each sandbox command accepts, and how a command line's words divide into
options, their arguments and operands — read as the command itself reads them (getopt_long's
rules: clusters, attached and separate arguments, long options by unique prefix, `--`).

It owns the option table of the box.wasm commands (`GRAMMARS`, in getopt's notation, and
`FIND_PRIMARIES`), the one source lint reads to refuse an option the sandbox does not have
(T012) and to tell a compared file from an option's argument. A test holds the table equal
to what box.wasm accepts. It runs nothing. A command absent from the table (echo, printf,
test, expr, awk, jq, xargs, python3, the builtins) is not judged here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from groundskeeper.fastclass import fastclass, field

__all__ = [
    "FIND_PRIMARIES",
    "GRAMMARS",
    "Grammar",
    "Parsed",
    "parse_options",
    "supported_options",
]


@fastclass(frozen=True, slots=True)
class Grammar:
    """A command's options: `short` in getopt's notation (`U:` takes an argument, `I::` an
    optional one, attached), `long` as `name`, `name=` (an argument) or `name=?` (an
    optional one, after `=`); `stops`: options end at the first operand; `numbers`: a word
    `-N` (a digit after the dash) is an operand or an old shorthand, not an option."""

    short: str
    long: tuple[str, ...] = ()
    stops: bool = False
    numbers: bool = False
    #: the values an option takes, where the command refuses others: option → (a regular
    #: expression the whole value matches, what to write instead)
    values: dict[str, tuple[str, str]] = field(default_factory=dict)

    def takes(self, letter: str) -> str | None:
        """'' (a flag), ':' (an argument), '::' (an optional attached one), or None."""
        at = self.short.find(letter)
        if letter == ":" or at < 0:
            return None
        rest = self.short[at + 1 : at + 3]
        return "::" if rest == "::" else ":" if rest[:1] == ":" else ""

    def long_option(self, written: str) -> tuple[str, str] | None:
        """The long option `written` (without `--` and `=value`) names — exactly, or as its
        only prefix, as getopt_long reads it — and what it takes ('', '=', '=?')."""
        names = {spec.split("=", 1)[0]: spec[len(spec.split("=", 1)[0]) :] for spec in self.long}
        if written in names:
            return written, names[written]
        found = [name for name in names if name.startswith(written)]
        if len(found) == 1:
            return found[0], names[found[0]]
        return None


def _g(short: str, *long: str, stops: bool = False, numbers: bool = False) -> Grammar:
    return Grammar(short, long, stops, numbers)


_SUMS = _g("cbtw", "check", "binary", "text", "warn", "quiet", "status", "strict")
_HEAD = _g("n:c:qv", "lines=", "bytes=", "quiet", "silent", "verbose", numbers=True)

#: The box.wasm commands that read options with getopt, as box/cmd_*.c declares them.
GRAMMARS: dict[str, Grammar] = {
    "base64": _g("diw:", "decode", "ignore-garbage", "wrap="),
    "basename": _g("as:", "multiple", "suffix="),
    "cat": _g("nbsEu"),
    "cmp": _g("slbn:", "silent", "quiet", "verbose", "print-bytes", "bytes="),
    "comm": _g("123", "check-order", "nocheck-order", "output-delimiter=", "total"),
    "cp": _g("rRfnpavt:T", "recursive", "force", "no-clobber", "preserve", "archive",
             "verbose", "target-directory=", "no-target-directory"),
    "cut": _g("b:c:f:d:sn", "complement", "output-delimiter="),
    "date": Grammar(
        "ur:d:I::R",
        ("utc", "universal", "reference=", "date=", "iso-8601=?", "rfc-email"),
        values=dict.fromkeys(
            ("-d", "--date"),
            ("@.*", "the sandbox's `date` reads only `@SECONDS` there; for a file's time write"
                    " `date -r FILE`"),
        ),
    ),
    "diff": _g("qusU:"),
    "dirname": _g("z", "zero"),
    "du": _g("abcd:kms", "all", "apparent-size", "bytes", "total", "max-depth=", "summarize"),
    "env": _g("iu:0", "ignore-environment", "unset=", "null", stops=True),
    "grep": Grammar(
        "qcivnlLoshHEFGxwrRm:e:A:B:C:",
        ("color=?", "colour=?"),
        values=dict.fromkeys(
            ("--color", "--colour"), ("never|auto", "drop it: a check's output is no terminal")
        ),
    ),
    "head": _HEAD,
    "tail": _HEAD,
    "ls": _g("1aAdlhrRtS", "all", "almost-all", "directory", "human-readable", "reverse",
             "recursive"),
    "md5sum": _SUMS,
    "sha1sum": _SUMS,
    "sha256sum": _SUMS,
    "sha512sum": _SUMS,
    "mkdir": _g("pv", "parents", "verbose"),
    "mv": _g("fnvt:T", "force", "no-clobber", "verbose", "target-directory=",
             "no-target-directory"),
    "nl": _g("b:n:w:s:v:i:", "body-numbering=", "number-format=", "number-width=",
             "number-separator=", "starting-line-number=", "line-increment="),
    "paste": _g("d:s", "delimiters=", "serial"),
    "pwd": _g("LP"),
    "readlink": _g("femnqsvz", "canonicalize", "canonicalize-existing", "canonicalize-missing",
                   "no-newline", "quiet", "silent", "verbose", "zero"),
    "realpath": _g("emsqzP", "canonicalize-existing", "canonicalize-missing", "no-symlinks",
                   "strip", "quiet", "zero", "physical", "relative-to="),
    "rev": _g(""),
    "rm": _g("rRfdv", "recursive", "force", "dir", "verbose"),
    "sed": _g("nEre:i::s", "in-place=?", "separate"),
    "seq": _g("s:f:w", "separator=", "equal-width", "format=", numbers=True),
    "sort": _g("nrufbscCk:t:o:"),
    "stat": _g("c:L", "format=", "printf=", "dereference"),  # and -c or --printf, always
    "tee": _g("aip", "append", "ignore-interrupts"),
    "touch": _g("camr:", "no-create", "reference="),
    "tr": _g("dscCt", stops=True),
    "uniq": _g("cdDuif:s:w:"),
    "wc": _g("lwmcL", "lines", "words", "chars", "bytes", "max-line-length"),
}  # fmt: skip

#: `find`'s primaries, operators and global options the sandbox has, with how many words
#: each takes after it (`-exec … ;`/`+` is run by the shell, `groundskeeper.sandbox.fanout`).
FIND_PRIMARIES: dict[str, int] = {
    "-name": 1, "-iname": 1, "-path": 1, "-wholename": 1, "-type": 1, "-newer": 1,
    "-maxdepth": 1, "-mindepth": 1,
    "-empty": 0, "-true": 0, "-false": 0, "-print": 0, "-print0": 0, "-delete": 0,
    "-depth": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0,
    "-exec": -1,
}  # fmt: skip


@fastclass(frozen=True, slots=True)
class Parsed:
    """A command line's words (after the name) as the command reads them: `operands` by
    index into the words; `refused`, each option the command does not have or a value it
    does not take, as written, with advice or ''."""

    operands: tuple[int, ...]
    options: tuple[tuple[str, str | None], ...]  # (option as written, its argument)
    refused: tuple[tuple[str, str], ...]


def parse_options(name: str, words: Sequence[str | None]) -> Parsed | None:
    """How `name` reads `words` (None: a word whose text is not known before it runs,
    read as an operand); None when the table does not know the command."""
    if name == "find":
        return _parse_find(words)
    grammar = GRAMMARS.get(name)
    if grammar is None:
        return None
    operands: list[int] = []
    options: list[tuple[str, str | None]] = []
    refused: list[tuple[str, str]] = []
    index, ended = 0, False
    while index < len(words):
        word = words[index]
        index += 1
        if ended or word is None or word == "-" or not word.startswith("-"):
            operands.append(index - 1)
            if grammar.stops:
                ended = True
            continue
        if word == "--":
            ended = True
            continue
        if grammar.numbers and word[1:2].isdigit():
            operands.append(index - 1)
            continue
        if word.startswith("--"):
            written, has_value, value = word[2:].partition("=")
            found = grammar.long_option(written)
            if found is None:
                refused.append((f"--{written}", ""))
                continue
            long_name, takes = found
            argument: str | None = value if has_value else None
            if takes == "=" and not has_value and index < len(words):
                argument, index = words[index], index + 1
            options.append((f"--{long_name}", argument))
            continue
        for at, letter in enumerate(word[1:], start=1):
            short = grammar.takes(letter)
            if short is None:
                refused.append((f"-{letter}", ""))
                continue
            if not short:
                options.append((f"-{letter}", None))
                continue
            attached = word[at + 1 :]
            if attached or short == "::":
                options.append((f"-{letter}", attached or None))
            elif index < len(words):
                options.append((f"-{letter}", words[index]))
                index += 1
            else:
                options.append((f"-{letter}", None))
            break
    for option, argument in options:
        rule = grammar.values.get(option)
        if rule is not None and argument is not None and not re.fullmatch(rule[0], argument):
            refused.append((f"{option} {argument}", rule[1]))
    return Parsed(tuple(operands), tuple(options), tuple(refused))


def _parse_find(words: Sequence[str | None]) -> Parsed:
    """find's paths (operands) and its expression: a word starting with `-` in the
    expression is a primary the table must know."""
    operands: list[int] = []
    options: list[tuple[str, str | None]] = []
    refused: list[tuple[str, str]] = []
    index, in_expression = 0, False
    while index < len(words):
        word = words[index]
        index += 1
        if word is None:
            if not in_expression:
                operands.append(index - 1)
            continue
        if word in ("!", "(", ")", ",") or (word.startswith("-") and len(word) > 1):
            in_expression = True
        if not in_expression:
            operands.append(index - 1)
            continue
        if not word.startswith("-") or len(word) == 1:
            continue
        takes = FIND_PRIMARIES.get(word)
        if takes is None:  # how many words it would take is not known: the rest is not read
            refused.append((word, ""))
            break
        if takes < 0:  # -exec CMD … ; or + : the rest up to the terminator
            while index < len(words) and words[index] not in (";", "+"):
                index += 1
            index += 1
            continue
        argument = words[index] if takes and index < len(words) else None
        options.append((word, argument))
        index += takes
    return Parsed(tuple(operands), tuple(options), tuple(refused))


def supported_options(name: str) -> str:
    """The options `name` has, as a user writes them (`-q -u -s -U N`), for a message."""
    if name == "find":
        return " ".join(p for p in FIND_PRIMARIES if p.startswith("-"))
    grammar = GRAMMARS.get(name)
    if grammar is None:
        return ""
    shown: list[str] = []
    for letter in grammar.short.replace(":", ""):
        takes = grammar.takes(letter)
        shown.append(f"-{letter}" + (" ARG" if takes == ":" else "[ARG]" if takes else ""))
    for spec in grammar.long:
        option, _, takes = spec.partition("=")
        shown.append(f"--{option}" + ("[=ARG]" if takes == "?" else "=ARG" if _ else ""))
    return " ".join(shown) if shown else "(no options)"
