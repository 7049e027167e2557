"""The sandbox shell's syntax tree, and what lint and the interpreter read off it.

It owns the node classes `groundskeeper.sandbox.syntax` builds and the walks over a finished
tree (`command_names`, `simple_commands`). It does not parse text nor run anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar, dataclass_transform

from groundskeeper.fastclass import fastclass

_Node = TypeVar("_Node")


# ---- the nodes -----------------------------------------------------------------------------


@dataclass_transform(frozen_default=True)
def _tree_node(cls: type[_Node]) -> type[_Node]:
    """A tree node: what `dataclass(slots=True, unsafe_hash=True)` makes of `cls`, built by
    `fastclass` (its methods compiled in one piece), a dataclass the type checker holds frozen.

    Lint parses every check of a plan, and a frozen dataclass's `object.__setattr__` per field
    was most of the cost of building a tree, so a node stores its fields plainly. The tree is
    never changed after parsing and `mypy --strict` refuses any assignment to a field; equal
    trees compare and hash equal.
    """
    return fastclass(slots=True, unsafe_hash=True)(cls)


@_tree_node
class Lit:
    """Literal text; `quoted` text is neither field-split nor globbed."""

    text: str
    quoted: bool


@_tree_node
class Param:
    """`$NAME`, `${NAME}` or `$?`."""

    name: str
    quoted: bool


@_tree_node
class CommandSub:
    """`$(…)`: its stdout, trailing newlines removed."""

    script: Script
    quoted: bool


@_tree_node
class ParamOp:
    """`${NAME op arg}`: op is one of `:-` `-` `:=` `=` `:+` `+` `#` `##` `%` `%%`, or `len`
    for `${#NAME}` (no arg)."""

    name: str
    op: str
    arg: Word | None
    quoted: bool


@_tree_node
class Arith:
    """`$((…))`: the expression's text after expansion is evaluated as integer arithmetic."""

    expr: Word
    quoted: bool


Part = Lit | Param | CommandSub | ParamOp | Arith


@_tree_node
class Word:
    parts: tuple[Part, ...]
    offset: int

    def literal(self) -> str | None:
        """The word's text when it has no expansions at all (quotes removed), else None."""
        if all(isinstance(p, Lit) for p in self.parts):
            return "".join(p.text for p in self.parts if isinstance(p, Lit))
        return None

    def has_glob(self) -> bool:
        return any(
            isinstance(p, Lit) and not p.quoted and any(c in p.text for c in "*?[")
            for p in self.parts
        )


@_tree_node
class Assignment:
    name: str
    value: Word
    offset: int


@_tree_node
class Redirect:
    """`fd op target`: op is `>`, `>>` or `<` with a target word, or `>&` with `dup_fd`."""

    fd: int
    op: str
    target: Word | None
    dup_fd: int | None
    offset: int


@_tree_node
class SimpleCommand:
    assignments: tuple[Assignment, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class If:
    """`if A; then B; elif C; then D; else E; fi`: clauses ((A, B), (C, D)), otherwise E."""

    clauses: tuple[tuple[Script, Script], ...]
    otherwise: Script | None
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class For:
    """`for NAME in WORDS; do BODY; done` (`for NAME; do` loops over no words)."""

    name: str
    words: tuple[Word, ...]
    body: Script
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class Loop:
    """`while COND; do BODY; done`, or `until` (`until` is True)."""

    condition: Script
    body: Script
    until: bool
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class CaseArm:
    patterns: tuple[Word, ...]
    body: Script


@_tree_node
class Case:
    word: Word
    arms: tuple[CaseArm, ...]
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class Group:
    """`{ BODY; }`, or `( BODY )` when `subshell` (its own cwd and variables)."""

    body: Script
    subshell: bool
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class CondWord:
    """`[[ WORD ]]`, or a unary test `[[ -f WORD ]]` (op `-n` for a bare word)."""

    op: str
    word: Word


@_tree_node
class CondBinary:
    """`[[ LEFT op RIGHT ]]`; for `==`/`!=` RIGHT is a glob pattern, for `=~` an ERE."""

    op: str
    left: Word
    right: Word


@_tree_node
class CondNot:
    inner: CondExpr


@_tree_node
class CondLogic:
    """`A && B` or `A || B` inside `[[ … ]]`."""

    op: str
    left: CondExpr
    right: CondExpr


CondExpr = CondWord | CondBinary | CondNot | CondLogic


@_tree_node
class Conditional:
    """`[[ … ]]`."""

    expr: CondExpr
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class ArithCommand:
    """`(( expr ))`: status 0 when the expression is not zero."""

    expr: Word
    redirects: tuple[Redirect, ...]
    offset: int


Compound = If | For | Loop | Case | Group | Conditional | ArithCommand
Command = SimpleCommand | Compound


@_tree_node
class Pipeline:
    commands: tuple[Command, ...]
    negated: bool


@_tree_node
class AndOr:
    """`first (&& | ||) …`: `rest` pairs each operator with the pipeline after it."""

    first: Pipeline
    rest: tuple[tuple[str, Pipeline], ...]


@_tree_node
class Script:
    items: tuple[AndOr, ...]


# ---- walks over a tree ----------------------------------------------------------------------


def command_names(script: Script) -> list[str]:
    """Literal command names of every simple command, in source order: `$(…)`, compound
    commands' bodies, and the commands `xargs` and `find -exec` run, included."""
    names: list[str] = []
    _collect_names(script, names)
    return names


def simple_commands(script: Script) -> Iterator[SimpleCommand]:
    """Every simple command of the script, at any depth (bodies, conditions, `$(…)`)."""
    for and_or in script.items:
        for pipeline in (and_or.first, *(p for _, p in and_or.rest)):
            for command in pipeline.commands:
                if isinstance(command, SimpleCommand):
                    yield command
                    for word in _command_words(command):
                        parts = word.parts
                        if len(parts) == 1 and type(parts[0]) is Lit:
                            continue  # the usual plain word: nothing inside
                        for inner in _word_scripts(word):
                            yield from simple_commands(inner)
                else:
                    for inner in _compound_scripts(command):
                        yield from simple_commands(inner)


def _command_words(command: SimpleCommand) -> Iterator[Word]:
    yield from (a.value for a in command.assignments)
    yield from command.words
    yield from (r.target for r in command.redirects if r.target is not None)


def _word_scripts(word: Word) -> Iterator[Script]:
    """The scripts inside a word's expansions, `${…}` and `$((…))` included."""
    for part in word.parts:
        if isinstance(part, CommandSub):
            yield part.script
        elif isinstance(part, ParamOp) and part.arg is not None:
            yield from _word_scripts(part.arg)
        elif isinstance(part, Arith):
            yield from _word_scripts(part.expr)


def _compound_scripts(command: Compound) -> Iterator[Script]:
    """A compound command's scripts in source order, with its words' `$(…)` as scripts."""
    words: tuple[Word, ...] = ()
    if isinstance(command, If):
        for condition, body in command.clauses:
            yield condition
            yield body
        if command.otherwise is not None:
            yield command.otherwise
    elif isinstance(command, For):
        for word in command.words:
            yield from _word_scripts(word)
        yield command.body
    elif isinstance(command, Loop):
        yield command.condition
        yield command.body
    elif isinstance(command, Case):
        yield from _word_scripts(command.word)
        for arm in command.arms:
            for word in arm.patterns:
                yield from _word_scripts(word)
            yield arm.body
    elif isinstance(command, Group):
        yield command.body
    elif isinstance(command, Conditional):
        words = tuple(_cond_words(command.expr))
    else:
        words = (command.expr,)
    for word in (*words, *(r.target for r in command.redirects if r.target is not None)):
        yield from _word_scripts(word)


def _cond_words(expr: CondExpr) -> Iterator[Word]:
    if isinstance(expr, CondWord):
        yield expr.word
    elif isinstance(expr, CondBinary):
        yield expr.left
        yield expr.right
    elif isinstance(expr, CondNot):
        yield from _cond_words(expr.inner)
    else:
        yield from _cond_words(expr.left)
        yield from _cond_words(expr.right)


def _collect_names(script: Script, names: list[str]) -> None:
    for and_or in script.items:
        for pipeline in (and_or.first, *(p for _, p in and_or.rest)):
            for command in pipeline.commands:
                if type(command) is not SimpleCommand:
                    for inner in _compound_scripts(command):  # type: ignore[arg-type]  # checked just above
                        _collect_names(inner, names)
                    continue
                if command.redirects and any(
                    type(part) is not Lit and type(part) is not Param
                    for redirect in command.redirects
                    if redirect.target is not None
                    for part in redirect.target.parts
                ):
                    # a redirection may stand anywhere, even before the assignments
                    words: list[tuple[int, Word, bool]] = []
                    words += [(a.offset, a.value, False) for a in command.assignments]
                    words += [(w.offset, w, i == 0) for i, w in enumerate(command.words)]
                    words += [(r.offset, r.target, False) for r in command.redirects if r.target]
                    words.sort(key=_offset)
                    for _, word, is_name in words:
                        _collect_word(word, is_name, names)
                    _collect_fanout(command, names)
                    continue
                # assignments are only read before the first word: already in source order,
                # and a redirection whose target has no `$(…)` gives no name wherever it stands
                for assignment in command.assignments:
                    _collect_word(assignment.value, False, names)
                is_name = True
                for word in command.words:
                    parts = word.parts
                    if len(parts) == 1 and type(parts[0]) is Lit:  # the usual plain word
                        if is_name:
                            names.append(parts[0].text)
                    else:
                        _collect_word(word, is_name, names)
                    is_name = False
                first = command.words[0].parts if command.words else ()
                if len(first) == 1 and type(first[0]) is Lit and first[0].text in _FANOUT:
                    _collect_fanout(command, names)


def _collect_word(word: Word, is_name: bool, names: list[str]) -> None:
    if is_name:
        literal = word.literal()
        if literal is not None:
            names.append(literal)
    for script in _word_scripts(word):
        _collect_names(script, names)


_FANOUT = frozenset({"xargs", "find"})  # commands whose words name another command


def _collect_fanout(command: SimpleCommand, names: list[str]) -> None:
    """The command `xargs` or `find … -exec` would run, when its name is written out."""
    if not command.words:
        return
    literals = [word.literal() for word in command.words]
    name = literals[0]
    if name == "xargs":
        inner = xargs_command(literals[1:])
        if inner is not None:
            names.append(inner)
    elif name == "find":
        for index, literal in enumerate(literals[:-1]):
            following = literals[index + 1]
            if literal in ("-exec", "-execdir", "-ok", "-okdir") and following is not None:
                names.append(following)


def launched_commands(script: Script) -> Iterator[tuple[str, str, int]]:
    """(launcher, name, offset) for each command a command of the script starts by name:
    `xargs CMD`, `find … -exec CMD` (launcher "find -exec", and -execdir, -ok, -okdir) and
    `env … CMD`, at any depth, when the name is written out (`registry.LAUNCHERS` says what
    each can start)."""
    for command in simple_commands(script):
        literals = [word.literal() for word in command.words]
        if not literals:
            continue
        name = literals[0]
        if name == "xargs":
            inner = xargs_command(literals[1:])
            if inner is not None:
                yield "xargs", inner, command.offset
        elif name == "find":
            for index, literal in enumerate(literals[:-1]):
                following = literals[index + 1]
                if literal in ("-exec", "-execdir", "-ok", "-okdir") and following is not None:
                    yield "find -exec", following, command.offset
        elif name == "env":
            inner = env_command(literals[1:])
            if inner is not None:
                yield "env", inner, command.offset


def _first_operand(args: list[str | None], valued: frozenset[str]) -> int | None:
    """The index of the first operand of a command's `args` (past its options, a `--`
    ending them; an option in `valued` takes the next word), or None when a word before it
    is not literal. `len(args)` when there is none."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg is None:
            return None
        if arg == "--":
            return index + 1
        if not arg.startswith("-") or arg == "-":
            break
        index += 2 if arg in valued else 1
    return min(index, len(args))


def env_command(args: list[str | None]) -> str | None:
    """The command `env ARGS` would run (as box/cmd_env.c reads its words: options `-i`,
    `-0`, `-u NAME`, then `-` and NAME=VALUE words), or None when it runs none or a word that
    decides it is not literal."""
    index = _first_operand(args, ENV_VALUED)
    if index is None:
        return None
    if index < len(args) and args[index] == "-":
        index += 1
    while index < len(args):
        arg = args[index]
        if arg is None:
            return None
        if "=" not in arg or arg.startswith("="):
            return arg
        index += 1
    return None


# env options that take a value as the next word.
ENV_VALUED = frozenset({"-u"})
# xargs options that take a value, attached (`-n2`) or as the next word.
XARGS_VALUED = frozenset({"-n", "-I", "-L", "-d", "-s", "-P", "-E"})


def xargs_command(args: list[str | None]) -> str | None:
    """The command name `xargs ARGS` runs ("echo" when none is given), or None when a word
    that decides it is not literal. Shared by lint and the interpreter."""
    index = _first_operand(args, XARGS_VALUED)
    if index is None:
        return None
    if index >= len(args):
        return "echo"
    return args[index]


def _offset(item: tuple[int, Word, bool]) -> int:
    return item[0]
