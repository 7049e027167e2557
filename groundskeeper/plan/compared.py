"""What a check compares the work against, read the way the check will run: `cd` moves where
its relative names point (a subshell's only inside it), assignments, `for` words and `${…}`
give variables their values, and the sandbox's own option table tells an operand from an
option's argument. The comparisons are by class: the file operands of `diff`, `cmp` and
`comm` (and what flows into a `-` operand), `*sum -c` lists, a `test`/`[[ … ]]` comparison
of `$(cat FILE)`, and, in `python3 -c`, a comparison of what it reads from files.

It owns that reading (`compared_files`); `plan.expected` decides which of them a run protects.
It reads the parsed script only, never the disk; a name it cannot know before the check
runs (`$(…)`, an unset variable) is left out. A glob stays a pattern.
"""

from __future__ import annotations

import ast
import itertools
import posixpath
import re
from collections.abc import Callable, Iterator

from groundskeeper.fastclass import fastclass, field
from groundskeeper.sandbox.command_options import parse_options
from groundskeeper.sandbox.patterns import Glob, trimmed
from groundskeeper.sandbox.tree import (
    Arith,
    Case,
    CommandSub,
    CondBinary,
    CondExpr,
    Conditional,
    CondLogic,
    CondNot,
    For,
    Group,
    If,
    Lit,
    Loop,
    Param,
    ParamOp,
    Pipeline,
    Script,
    SimpleCommand,
    Word,
    simple_commands,
)

__all__ = ["compared_files", "runs_pytest"]

# A value as the shell holds it: pieces of text, each with whether its glob characters are
# active (an unquoted `*` in a `for` list, or in an unquoted expansion).
Value = tuple[tuple[str, bool], ...]
_MAX_VALUES = 16  # values one word or variable may take before it counts as unknown

_COMPARERS = frozenset({"diff", "cmp", "comm"})
_SUMS = frozenset({"sha256sum", "sha512sum", "sha1sum", "md5sum"})
_PYTHONS = frozenset({"python3", "python", "micropython"})
_SHELLS = frozenset({"sh", "bash"})
# Commands whose operands are the files they read (what flows on into a `-` operand).
_READERS = frozenset({"cat", "sort", "head", "tail", "uniq", "cut", "nl", "rev", "paste"})
_EQUALITY = frozenset({"=", "==", "!="})
_AWK_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@fastclass
class _Env:
    """Where relative names point (possible directories, '' the workdir; None: unknown) and
    what each variable the script set may hold (None: unknown)."""

    cwd: tuple[str, ...] | None = ("",)
    values: dict[str, tuple[Value, ...] | None] = field(default_factory=dict)

    def copy(self) -> _Env:
        return _Env(self.cwd, dict(self.values))

    def merge(self, other: _Env) -> None:
        """What either of two ways through (an `if`'s branches) may have left."""
        if self.cwd is None or other.cwd is None:
            self.cwd = None
        else:
            self.cwd = tuple(dict.fromkeys(self.cwd + other.cwd))
        for name in set(self.values) | set(other.values):
            mine, theirs = self.values.get(name, ()), other.values.get(name, ())
            joined = None if mine is None or theirs is None else _cap(mine + theirs)
            self.values[name] = joined


def compared_files(script: Script) -> Iterator[str]:
    """The workdir-relative names (or glob patterns) the script compares against, in order;
    a name may come more than once."""
    reader = _Reader()
    reader.script(script, _Env())
    yield from reader.found


def checksum_lists(script: Script) -> Iterator[str]:
    """The checksum lists the script verifies (`sha256sum -c LIST`, `md5sum --check LIST`),
    as written: a file of hashes, compared against, that no worker can copy into the work
    (lint's T014 says what it is instead)."""
    for command in simple_commands(script):
        words = [w.literal() for w in command.words]
        if not words or words[0] not in _SUMS:
            continue
        parsed = parse_options(words[0], words[1:])
        if parsed is None or not any(o in ("-c", "--check") for o, _ in parsed.options):
            continue
        for index in parsed.operands:
            name = words[index + 1]
            if name is not None and name != "-":
                yield name


def runs_pytest(script: Script) -> bool:
    """Whether the script runs pytest itself (`python3 -m pytest …`), which reads its
    configuration and plugins from the workdir: `conftest.py`, `pytest.ini`, …"""
    from groundskeeper.sandbox.syntax import simple_commands

    for command in simple_commands(script):
        words = [w.literal() for w in command.words]
        if not words or words[0] not in ("python3", "python"):
            continue
        for at, word in enumerate(words[1:], start=1):
            module = words[at + 1] if word == "-m" and at + 1 < len(words) else None
            if word is not None and word.startswith("-m") and len(word) > 2:
                module = word[2:]
            if module in ("pytest", "py.test"):
                return True
            if word == "-c" or (word is not None and not word.startswith("-")):
                break  # the program or the script: what follows is its own
    return False


#: standard modules run with `-m` that read or compile the code under test without importing
#: it, so it cannot end them early (`python3 -m py_compile sol.py`, `-m compileall -q src`)
_NO_IMPORT = frozenset({"py_compile", "compileall", "json.tool", "tabnanny", "tokenize"})


def runs_python_in_process(script: Script) -> str | None:
    """How the script runs Python code that imports the code under test into the checking
    interpreter itself, other than pytest (`python3 -c '…import…'`, `python3 -m unittest`,
    `python3 -m mod`, `python3 check.py`): the command's text, or None. That interpreter's
    status is all the check sees, and the code it imports can end it early with status 0
    (`os._exit(0)`, `sys.exit(0)` at import)."""
    for command in _status_commands(script):
        words = [w.literal() for w in command.words]
        if not words or words[0] not in _PYTHONS:
            continue
        for at, word in enumerate(words[1:], start=1):
            if word is None:
                break
            rest = words[at + 1] if at + 1 < len(words) else None
            if word == "-c" or (word.startswith("-c") and len(word) > 2):
                code = rest if word == "-c" else word[2:]
                if code is None or _may_import_the_work(code, words[0]):
                    return " ".join(w or "…" for w in words)
                break
            module = rest if word == "-m" else word[2:] if word.startswith("-m") else None
            if word.startswith("-m"):
                if module in ("pytest", "py.test"):
                    break  # T025's
                if module in _NO_IMPORT:
                    break  # compiles or reads the code; never imports it
                return " ".join(w or "…" for w in words)
            if not word.startswith("-"):
                return " ".join(w or "…" for w in words)  # a program: `python3 check.py`
    return None


# Standard modules that import or run other code by name (a module, a file, a pickle's
# classes): code that uses them may run the code under test, whatever it imports itself.
_IMPORTERS = frozenset(
    {"importlib", "runpy", "imp", "pkgutil", "pickle", "shelve", "copyreg", "code", "codeop",
     "doctest", "unittest", "pydoc", "zipimport", "site", "multiprocessing", "concurrent",
     "trace", "profile", "cProfile", "pdb", "timeit", "test"}
)  # fmt: skip
# Builtins and attributes that import or run code by name or text.
_RUNS_CODE = frozenset(
    {"__import__", "exec", "eval", "compile", "execfile", "import_module", "run_path",
     "run_module", "exec_module", "load_module", "spec_from_file_location"}
)  # fmt: skip


def _may_import_the_work(code: str, python: str) -> bool:
    """Whether `python -c CODE` may import the code under test: anything but CPython code
    that parses and imports standard modules alone (a name a workdir file shadows is always
    the interpreter's own copy in the sandbox), none that imports or runs other code by name
    (`importlib`, `runpy`, `pickle`, …), and calls none of `__import__`, `exec`, `eval`,
    `compile`, `import_module`, `run_path`, … (MicroPython's modules are not told apart:
    there, every import counts)."""
    import sys

    if "import" not in code and not any(name in code for name in _RUNS_CODE):
        return False
    if python == "micropython":
        return True
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return True
    stdlib = sys.stdlib_module_names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if not node.level else [""]
        elif _named(node) in _RUNS_CODE:
            return True
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in stdlib or top in _IMPORTERS:
                return True
    return False


def _named(node: ast.AST) -> str | None:
    """The name a node calls a thing by: `exec` in `exec(…)`, `import_module` in
    `importlib.import_module(…)`; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _status_commands(script: Script) -> Iterator[SimpleCommand]:
    """The simple commands whose exit status, not their output, decides: each the last of
    its pipeline (one whose output flows on into a comparison or a `$(…)` is read for what
    it printed, which a program ended early does not print), in bodies at any depth."""
    from groundskeeper.sandbox.tree import _compound_scripts

    for and_or in script.items:
        for pipeline in (and_or.first, *(p for _, p in and_or.rest)):
            for at, command in enumerate(pipeline.commands):
                if isinstance(command, SimpleCommand):
                    if at == len(pipeline.commands) - 1:
                        yield command
                else:
                    for inner in _compound_scripts(command):
                        yield from _status_commands(inner)


class _Reader:
    def __init__(self) -> None:
        self.found: list[str] = []

    # -- the walk

    def script(self, script: Script, env: _Env) -> None:
        for item in script.items:
            self.pipeline(item.first, env)
            for _, pipeline in item.rest:
                self.pipeline(pipeline, env)

    def pipeline(self, pipeline: Pipeline, env: _Env) -> None:
        commands = pipeline.commands
        if len(commands) == 1:
            self.command(commands[0], env, ())
            return
        feeding: list[str] = []  # files the earlier stages read: they flow into the next
        for command in commands:
            stage = env.copy()  # each stage of a longer pipeline is a subshell
            self.command(command, stage, tuple(feeding))
            feeding = (
                self._reads(command, stage) + self.listed(command, stage)
                if isinstance(command, SimpleCommand)
                else []
            )

    def command(self, command: object, env: _Env, fed: tuple[str, ...]) -> None:
        if isinstance(command, SimpleCommand):
            self.simple(command, env, fed)
        elif isinstance(command, If):
            ends: list[_Env] = []  # how each branch leaves the shell
            for condition, body in command.clauses:
                self.script(condition, env)
                ends.append(env.copy())
                self.script(body, ends[-1])
            ends.append(env.copy())
            if command.otherwise is not None:
                self.script(command.otherwise, ends[-1])
            for end in ends[:-1]:
                ends[-1].merge(end)
            env.cwd, env.values = ends[-1].cwd, ends[-1].values
        elif isinstance(command, For):
            found: list[Value] = []
            for word in command.words:
                self.substituted_reads(word, env)  # `for l in $(cat X)`
            for word in command.words:
                values = self.listing(word, env) or self.expand(word, env, split=True)
                if values is None:
                    found = []
                    env.values[command.name] = None
                    break
                found += values
            else:
                env.values[command.name] = _cap(tuple(found))
            self.script(command.body, env)
        elif isinstance(command, Loop):
            # every line a `while read` loop reads is an expectation its body checks
            self.found.extend(fed)
            for redirect in command.redirects:
                if redirect.op == "<" and redirect.fd == 0 and redirect.target is not None:
                    self.operand(redirect.target, env)
            self.script(command.condition, env)
            self.script(command.body, env)
        elif isinstance(command, Case):
            for arm in command.arms:
                self.script(arm.body, env.copy())
        elif isinstance(command, Group):
            self.script(command.body, env.copy() if command.subshell else env)
        elif isinstance(command, Conditional):
            self.condition(command.expr, env)

    def simple(self, command: SimpleCommand, env: _Env, fed: tuple[str, ...]) -> None:
        for word in _words_of(command):
            # what a `$(cat X)` reads is a reference wherever the check uses it: a pattern
            # (`grep -qxF "$(cat X)"`), a number (`-eq "$(cat X)"`), a variable (`E=$(cat X)`)
            self.substituted_reads(word, env)
            for part in word.parts:
                if isinstance(part, CommandSub):
                    self.script(part.script, env.copy())
        if not command.words:
            for assignment in command.assignments:
                env.values[assignment.name] = self.expand(assignment.value, env, split=False)
            return
        texts = [self.known(word, env) for word in command.words]
        name, args = texts[0], texts[1:]
        if name == "cd":
            self.cd(args, env)
        elif name == "export":
            for arg in args:
                if arg is not None and "=" in arg:
                    key, _, value = arg.partition("=")
                    env.values[key] = (((value, False),),)
        elif name == "read":
            for arg in args:
                if arg is not None and not arg.startswith("-"):
                    env.values[arg] = None
            # what `read want < expected.txt` reads is a value the check compares with
            self.found.extend(self._redirected(command, env))
        elif name in _COMPARERS or name in _SUMS:
            self.comparer(name, command, args, env, fed)
        elif name in ("test", "["):
            if any(arg in _EQUALITY for arg in args):
                for word in command.words[1:]:
                    self.substituted_reads(word, env)
        elif name in _PYTHONS:
            self.python(command, args, env)
        elif name == "grep":
            self.grep(command, args, env, fed)
        elif name == "awk":
            self.awk(command, args, env)

    def cd(self, args: list[str | None], env: _Env) -> None:
        if not args:
            env.cwd = ("",)
            return
        target = args[0]
        if target is None or target == "-" or target.startswith("/") or env.cwd is None:
            env.cwd = None
            return
        moved = [_join(cwd, target) for cwd in env.cwd]
        env.cwd = None if None in moved else tuple(dict.fromkeys(m for m in moved if m is not None))

    def comparer(
        self,
        name: str,
        command: SimpleCommand,
        args: list[str | None],
        env: _Env,
        fed: tuple[str, ...],
    ) -> None:
        parsed = parse_options(name, args)
        if parsed is None:
            return
        if name in _SUMS and not any(o in ("-c", "--check") for o, _ in parsed.options):
            return
        if name == "cmp" and len(parsed.operands) == 1:  # the second operand is stdin
            self.found.extend(fed)
            self.found.extend(self._redirected(command, env))
        for index in parsed.operands:
            if args[index] == "-":
                self.found.extend(fed)
                self.found.extend(self._redirected(command, env))
                continue
            self.operand(command.words[index + 1], env)

    def condition(self, expr: CondExpr, env: _Env) -> None:
        if isinstance(expr, CondBinary):
            if expr.op in _EQUALITY:
                self.substituted_reads(expr.left, env)
                self.substituted_reads(expr.right, env)
        elif isinstance(expr, CondNot):
            self.condition(expr.inner, env)
        elif isinstance(expr, CondLogic):
            self.condition(expr.left, env)
            self.condition(expr.right, env)

    def substituted_reads(self, word: Word, env: _Env) -> None:
        """The files a `$(cat FILE)` or `$(< FILE)` in a compared word reads."""
        for part in word.parts:
            if not isinstance(part, CommandSub):
                continue
            inner = env.copy()
            for item in part.script.items:
                for pipeline in (item.first, *(p for _, p in item.rest)):
                    for command in pipeline.commands:
                        if isinstance(command, SimpleCommand):
                            self.found.extend(self._reads(command, inner))

    def python(self, command: SimpleCommand, args: list[str | None], env: _Env) -> None:
        """`python3 -c CODE`, or a program read from a here-document (`python3 - <<'PY'`,
        `python3 <<'PY'`): the files it compares."""
        code: str | None = None
        if "-c" in args:
            at = args.index("-c")
            code = args[at + 1] if at + 1 < len(args) else None
        elif all(arg is not None and (arg == "-" or arg.startswith("-")) for arg in args):
            fed = [
                r.target.literal()
                for r in command.redirects
                if r.fd == 0 and r.op == "<<" and r.target is not None
            ]
            code = fed[-1] if fed else None
        if code is None or env.cwd is None:
            return
        for name in _python_compared(code):
            self.found.extend(p for cwd in env.cwd if (p := _join(cwd, name)))

    def grep(
        self, command: SimpleCommand, args: list[str | None], env: _Env, fed: tuple[str, ...]
    ) -> None:
        """A grep whose pattern is what a `$(…)` read (`grep -rqxF "$(cat out.txt)" accepted`:
        any accepted answer) compares it with each file it searches: those operands (a
        directory, under `-r`: every file there), or what flows into it (`cat keys/* |`,
        `ls keys |`), are the other side of the comparison (adversary-17 F12)."""
        parsed = parse_options("grep", args)
        if parsed is None or not any(
            isinstance(part, CommandSub) for word in command.words[1:] for part in word.parts
        ):
            return
        given = any(o in ("-e", "--regexp") for o, _ in parsed.options)
        files = parsed.operands if given else parsed.operands[1:]
        for index in files:
            if args[index] != "-":
                self.operand(command.words[index + 1], env)
        if not files or any(args[i] == "-" for i in files):
            self.found.extend(fed)
            self.found.extend(self._redirected(command, env))

    def listed(self, command: SimpleCommand, env: _Env) -> list[str]:
        """The directories an `ls DIR` or `find DIR …` lists: what flows from it into a
        `while read` loop or a grep names the files the check compares with."""
        name = self.known(command.words[0], env) if command.words else None
        if name not in ("ls", "find"):
            return []
        args = [self.known(word, env) for word in command.words[1:]]
        parsed = parse_options(name, args)
        if parsed is None:
            return []
        before = len(self.found)
        for index in parsed.operands:
            self.operand(command.words[index + 1], env)
        found = self.found[before:]
        del self.found[before:]
        return found

    def listing(self, word: Word, env: _Env) -> tuple[Value, ...] | None:
        """What a word that is one `$(ls DIR)` or `$(find DIR …)` yields, as patterns: the
        names in DIR (`*`: `for k in $(ls keys); do cmp -s out.txt "keys/$k"`) or the paths
        under it (`DIR/*`, for find); None for any other word."""
        if len(word.parts) != 1 or not isinstance(word.parts[0], CommandSub):
            return None
        commands = list(simple_commands(word.parts[0].script))
        if len(commands) != 1 or not commands[0].words:
            return None
        name = self.known(commands[0].words[0], env)
        listed = self.listed(commands[0], env.copy())
        if name == "ls" and len(listed) == 1:
            return ((("*", True),),)
        if name == "find" and listed:
            return tuple(((d.rstrip("/") + "/", False), ("**/*", True)) for d in listed)
        return None

    def awk(self, command: SimpleCommand, args: list[str | None], env: _Env) -> None:
        """An awk program given two or more files reads them side by side (`NR==FNR{…}`
        keeps the first to compare the rest with): its file operands are compared."""
        files = _awk_files(args)
        if len(files) >= 2:
            for index in files:
                if args[index] != "-":
                    self.operand(command.words[index + 1], env)

    # -- names

    def operand(self, word: Word, env: _Env) -> None:
        values = self.expand(word, env, split=True)
        if values is None or env.cwd is None:
            return
        for value in values:
            text = _pattern(value)
            if text in ("-", "/dev/null") or text.startswith("/"):
                continue
            self.found.extend(p for cwd in env.cwd if (p := _join(cwd, text)))

    def _reads(self, command: SimpleCommand, env: _Env) -> list[str]:
        """The files a reading command (`cat`, `sort`, …, or a filter whose program comes
        first: `sed -n 1p`, `grep`, `awk`, `jq`) takes as operands, and its `<`."""
        found: list[str] = []
        name = self.known(command.words[0], env) if command.words else None
        if name in _READERS:
            args = [self.known(word, env) for word in command.words[1:]]
            parsed = parse_options(name, args)
            if parsed is not None:
                before = len(self.found)
                for index in parsed.operands:
                    arg = args[index] or ""
                    if arg != "-" and not (arg[:1] == "-" and arg[1:].isdigit()):  # `head -1`
                        self.operand(command.words[index + 1], env)
                found += self.found[before:]
                del self.found[before:]
        elif name in _FILTERS:
            args = [self.known(word, env) for word in command.words[1:]]
            before = len(self.found)
            for index in _FILTERS[name](args):
                if args[index] != "-":
                    self.operand(command.words[index + 1], env)
            found += self.found[before:]
            del self.found[before:]
        if name is not None and _runs_program(name, command, self, env):
            return found  # its standard input is what the program under test reads
        return found + self._redirected(command, env)

    def _redirected(self, command: SimpleCommand, env: _Env) -> list[str]:
        before = len(self.found)
        for redirect in command.redirects:
            if redirect.op == "<" and redirect.fd == 0 and redirect.target is not None:
                self.operand(redirect.target, env)
        found = self.found[before:]
        del self.found[before:]
        return found

    def known(self, word: Word, env: _Env) -> str | None:
        """A word's one text, when it has exactly one and no glob; else None."""
        values = self.expand(word, env, split=True)
        if values is None or len(values) != 1:
            return None
        value = values[0]
        if any(active and _has_glob(text) for text, active in value):
            return None
        return "".join(text for text, _ in value)

    def expand(self, word: Word, env: _Env, *, split: bool) -> tuple[Value, ...] | None:
        """Every text `word` may have (a command word: unquoted expansions glob), or None."""
        options: list[tuple[Value, ...]] = []
        for part in word.parts:
            if isinstance(part, Lit):
                options.append((((part.text, not part.quoted),),))
            elif isinstance(part, Param):
                got = self._variable(part.name, env)
                if got is None:
                    return None
                options.append(_requote(got, part.quoted, split))
            elif isinstance(part, ParamOp):
                got = self._parameter(part, env)
                if got is None:
                    return None
                options.append(_requote(got, part.quoted, split))
            else:  # `$(…)`, `$((…))`: not known before the check runs
                assert isinstance(part, CommandSub | Arith)
                return None
        joined = [sum(pieces, ()) for pieces in itertools.product(*options)]
        if len(joined) > _MAX_VALUES:
            return None
        return tuple(joined) if joined else ((),)

    def _variable(self, name: str, env: _Env) -> tuple[Value, ...] | None:
        if name not in env.values:
            return None if name == "?" or name.isdigit() else ((),)  # unset: empty
        return env.values[name]

    def _parameter(self, part: ParamOp, env: _Env) -> tuple[Value, ...] | None:
        name, op = part.name, part.op
        value = env.values.get(name, ()) if name in env.values else None
        unset = name not in env.values
        if op == "len":
            return None
        if op in (":-", "-", ":=", "="):
            if unset:
                arg = self.expand(part.arg, env, split=False) if part.arg is not None else ((),)
                if op in (":=", "=") and arg is not None:
                    env.values[name] = arg
                return arg
            return value
        if op in (":+", "+"):
            if unset:
                return ((),)
            return self.expand(part.arg, env, split=False) if part.arg is not None else None
        if value is None or part.arg is None:
            return None
        patterns = self.expand(part.arg, env, split=False)
        if patterns is None or len(patterns) != 1:
            return None
        glob = Glob([(char, active) for text, active in patterns[0] for char in text])
        return tuple(_remove(v, op, glob) for v in value) if value else ((),)


def _remove(value: Value, op: str, glob: Glob) -> Value:
    """`${X%p}` and the like of one value, by the shell's own trimming (`patterns.trimmed`);
    what is left keeps each character's glob activity, so `for t in cases/*.in` then
    `"${t%.in}.out"` is the pattern `cases/*.out`, every file the loop compares against."""
    chars = [(c, active) for text, active in value for c in text]
    text = "".join(c for c, _ in chars)
    kept = trimmed(text, op, glob, _no_tick)
    start = len(text) - len(kept) if op[0] == "#" else 0
    pieces = itertools.groupby(chars[start : start + len(kept)], key=lambda pair: pair[1])
    return tuple(("".join(c for c, _ in group), active) for active, group in pieces)


def _runs_program(name: str, command: SimpleCommand, reader: _Reader, env: _Env) -> bool:
    """Whether the command runs a program from the workdir (`./prog`, `python3 solve.py`,
    `sh run.sh`, `python3 -m mod`): what it reads on its standard input is the program's
    input, not what flows on into a comparison (`prog < x.in | diff - x.out`). A check's own
    code (`python3 -c …`, `sh -c …`) passes its input on like any filter."""
    if "/" in name:
        return True
    if name not in _PYTHONS and name not in _SHELLS:
        return False
    args = [reader.known(word, env) for word in command.words[1:]]
    for arg in args:
        if arg is None:
            return True  # unknown: a program, so its input is not taken for an expectation
        if arg == "-c":
            return False
        if arg == "-m" or not arg.startswith("-"):
            return True
    return False


def _no_tick() -> None:
    """Patterns here are as short as a check's text: no deadline to look at."""


def _requote(values: tuple[Value, ...], quoted: bool, split: bool) -> tuple[Value, ...]:
    """A variable's values where it is used: quoted, as they are (a `for` glob stays one);
    unquoted in a command word, their glob characters are active."""
    if quoted or not split:
        return values
    return tuple(tuple((text, True) for text, _ in value) for value in values)


def _has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _pattern(value: Value) -> str:
    """A value as a path pattern: active glob characters as they are, quoted ones escaped."""
    return "".join(
        text if active else "".join("\\" + c if c in "*?[\\" else c for c in text)
        for text, active in value
    )


def _join(cwd: str, name: str) -> str | None:
    """`name` seen from `cwd`, relative to the workdir ('' for the workdir itself); None
    when it leaves it."""
    joined = posixpath.normpath(posixpath.join(cwd, name)) if name else cwd
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def _cap(values: tuple[Value, ...]) -> tuple[Value, ...] | None:
    unique = tuple(dict.fromkeys(values))
    return unique if len(unique) <= _MAX_VALUES else None


def _words_of(command: SimpleCommand) -> Iterator[Word]:
    yield from command.words
    yield from (a.value for a in command.assignments)
    yield from (r.target for r in command.redirects if r.target is not None)


# -- python3 -c -----------------------------------------------------------------------------------


def _python_compared(code: str) -> list[str]:
    """The files a Python program compares: the string-named files read on either side of
    an `==`/`!=` (directly, or through a name bound to such a read), or given to
    `filecmp.cmp`."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    bound: dict[str, list[str]] = {}
    strings: dict[str, str] = {}
    assigned = [
        (node.targets[0].id, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ]
    for name, value in assigned:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            strings[name] = value.value
    for name, value in assigned:
        if read := _python_reads(value, strings, bound):
            bound[name] = read
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops
        ):
            for side in (node.left, *node.comparators):
                found += _python_reads(side, strings, bound)
        elif isinstance(node, ast.Call) and _dotted(node.func) in ("filecmp.cmp", "cmp"):
            found += [s for arg in node.args[:2] if (s := _string(arg, strings)) is not None]
    return list(dict.fromkeys(found))


def _python_reads(node: ast.AST, strings: dict[str, str], bound: dict[str, list[str]]) -> list[str]:
    """The string-named files an expression reads: `open(NAME)` for reading,
    `Path(NAME).read_text()`/`.read_bytes()`/`.open()`, or a name bound to such a read."""
    found: list[str] = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and inner.id in bound:
            found += bound[inner.id]
        if not isinstance(inner, ast.Call):
            continue
        called = _dotted(inner.func)
        if called in ("open", "io.open", "codecs.open") and inner.args:
            mode = _string(inner.args[1], strings) if len(inner.args) > 1 else "r"
            for keyword in inner.keywords:
                if keyword.arg == "mode":
                    mode = _string(keyword.value, strings)
            if mode is not None and not any(c in mode for c in "wax+"):
                name = _string(inner.args[0], strings)
                if name is not None:
                    found.append(name)
        elif isinstance(inner.func, ast.Attribute) and inner.func.attr in (
            "read_text",
            "read_bytes",
            "open",
        ):
            owner = inner.func.value
            if isinstance(owner, ast.Call) and _dotted(owner.func) in ("Path", "pathlib.Path"):
                name = _string(owner.args[0], strings) if owner.args else None
                if name is not None:
                    found.append(name)
    return found


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _string(node: ast.AST, strings: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return strings.get(node.id)
    return None


def _program_first(name: str, given_by: str) -> Callable[[list[str | None]], list[int]]:
    """A table command whose first operand is its program (`sed`'s script, `grep`'s pattern)
    unless an option gives it (`-e`): the indexes of the files it reads (an in-place `sed -i`
    edits, it reads nothing out)."""

    def files(args: list[str | None]) -> list[int]:
        parsed = parse_options(name, args)
        if parsed is None or any(o in ("-i", "--in-place") for o, _ in parsed.options):
            return []
        given = any(o == given_by for o, _ in parsed.options)
        return list(parsed.operands if given else parsed.operands[1:])

    return files


def _awk_files(args: list[str | None]) -> list[int]:
    """The indexes of the files an awk command line reads (after its options and its
    program, unless `-f` gives that; `var=value` operands are assignments)."""
    at, program = 0, True
    while at < len(args):
        arg = args[at]
        if arg is None or arg == "--" or not arg.startswith("-") or arg == "-":
            at += arg == "--"
            break
        if arg in ("-F", "-v", "-f"):
            program = program and arg != "-f"
            at += 2
            continue
        program = program and not arg.startswith("-f")
        at += 1
    return [
        i
        for i in range(at + program, len(args))
        if args[i] is None or not _AWK_ASSIGNMENT.match(args[i] or "")
    ]


#: jq's options that take words after them (`--arg NAME VALUE`: two)
_JQ_TAKES = {
    "--arg": 2, "--argjson": 2, "--slurpfile": 2, "--rawfile": 2, "--indent": 1, "-L": 1,
    "-f": 1, "--from-file": 1,
}  # fmt: skip


def _jq_files(args: list[str | None]) -> list[int]:
    """The indexes of the files a jq command line reads: its operands after the filter
    (unless `-f`/`--from-file` gives that), up to `--args`/`--jsonargs` (the rest are
    values, not files)."""
    files: list[int] = []
    program, at, ended = True, 0, False
    while at < len(args):
        arg = args[at]
        if not ended and arg in ("--args", "--jsonargs"):
            break
        if not ended and arg == "--":
            ended = True
        elif not ended and arg is not None and arg.startswith("-") and arg != "-":
            program = program and arg not in ("-f", "--from-file")
            at += _JQ_TAKES.get(arg, 0)
        elif program:
            program = False
        else:
            files.append(at)
        at += 1
    return files


#: filters whose operands after their program are the files they read → those indexes
_FILTERS: dict[str, Callable[[list[str | None]], list[int]]] = {
    "sed": _program_first("sed", "-e"),
    "grep": _program_first("grep", "-e"),
    "awk": _awk_files,
    "jq": _jq_files,
}
