"""The sandbox shell's simple commands: assignments, words, redirections, then the command.

It owns redirections (here-documents fed as stdin), the choice of builtin, xargs, find -exec or
stage, and the builtins (`cd : exit export read break continue`); not compound commands.
"""

from __future__ import annotations

import os
import re

import groundskeeper.sandbox.fanout as fanout
from groundskeeper.sandbox.confine import DEV_NULL, PathRefused
from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.registry import BOX_COMMANDS, BUILTINS, PYTHON_COMMANDS, did_you_mean
from groundskeeper.sandbox.result import SandboxError
from groundskeeper.sandbox.shell_expand import Expansion
from groundskeeper.sandbox.shell_stages import NOT_STARTED, CommandFailed, Exit, LoopJump, State
from groundskeeper.sandbox.shell_streams import FileSink, Input, Stdin
from groundskeeper.sandbox.syntax_scanner import NAME
from groundskeeper.sandbox.tree import Lit, Redirect, SimpleCommand, Word

#: `test` and `[`: in a check, an unquoted expansion inside one must stay one word
_TESTS = frozenset({"test", "[", "expr"})  # whose arguments are operators as well as values

__all__ = ["SimpleCommands"]


class SimpleCommands(Expansion):
    """The interpreter's simple-command layer."""

    def refuse_split(self, word: Word, fields: list[str]) -> None:
        """In a check, an unquoted expansion that splits into several words inside `test`,
        `[` or `expr` fails the check: the work's output would become the test's operators
        (`1 = 1 -o 1`, adversary-21 F22; `expr 1 | 1 = 3`, adversary-28 F5); quote it."""
        if any(not isinstance(part, Lit) and not getattr(part, "quoted", False)
               for part in word.parts):  # fmt: skip
            shown = " ".join(fields)
            raise CommandFailed(
                f"an unquoted expansion became {len(fields)} words inside `test`/`[`/`expr`"
                f" ({shown!r}): a check never reads expanded text as code (the test's"
                ' operators); quote it: "$(cat FILE)"',
                2,
            )

    def simple(
        self, command: SimpleCommand, state: State, stdin: Stdin, out: Sink, err: Sink
    ) -> int:
        first = command.words[0].parts if command.words else ()
        self.tick(first[0].text if len(first) == 1 and isinstance(first[0], Lit) else "")
        self.last_sub_status.append(-1)
        self.memory.frames.append(0)
        opened: list[int] = []
        try:
            try:
                assignments = [
                    (a.name, self.expand_one(a.value, state, err)) for a in command.assignments
                ]
                words: list[str] = []
                for word in command.words:
                    fields = self.expand_fields(word, state, err)
                    if len(fields) > 1 and words and words[0] in _TESTS and self.strict_negation:
                        self.refuse_split(word, fields)
                    words.extend(fields)
                streams = self.redirect(command.redirects, state, stdin, out, err, opened)
            except CommandFailed as failed:
                err.write(f"sh: {failed.message}\n".encode())
                self.decider = ("", NOT_STARTED, failed.status)
                return failed.status
            sub_status = self.last_sub_status[-1]
            if not words:
                for name, value in assignments:
                    self.assign(state, name, value)
                return max(sub_status, 0)
            return self.execute(words, assignments, state, streams)
        finally:
            self.last_sub_status.pop()
            self.memory.held -= self.memory.frames.pop()
            for fd in opened:
                os.close(fd)

    def redirect(
        self,
        redirects: tuple[Redirect, ...],
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        opened: list[int],
    ) -> tuple[Stdin, Sink, Sink]:
        """Apply redirections left to right, as bash does; returns (stdin, out, err)."""
        streams: dict[int, Sink] = {1: out, 2: err}
        for redirect in redirects:
            if redirect.op == ">&":
                assert redirect.dup_fd is not None
                if redirect.fd == 0:
                    raise CommandFailed(f"{redirect.fd}>&{redirect.dup_fd}: not supported")
                streams[redirect.fd] = streams[redirect.dup_fd]
                continue
            assert redirect.target is not None
            if redirect.op in ("<<", "<<<"):
                text = self.expand_one(redirect.target, state, err)
                stdin = text.encode() + (b"\n" if redirect.op == "<<<" else b"")
                continue
            fields = self.expand_fields(redirect.target, state, err)
            if len(fields) != 1:
                shown = "".join(p.text for p in redirect.target.parts if isinstance(p, Lit))
                raise CommandFailed(f"{shown or '$…'}: ambiguous redirect")
            target = fields[0]
            if redirect.op == "<":
                fd = self.open(state, target, os.O_RDONLY)
                opened.append(fd)
                stdin = fd
                continue
            if self.read_only and target != DEV_NULL:
                raise CommandFailed(f"{target}: Read-only file system (read-only sandbox)")
            flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if redirect.op == ">>" else os.O_TRUNC)
            fd = self.open(state, target, flags)
            opened.append(fd)
            streams[redirect.fd] = FileSink(fd, self.limits.pipe, self.quota)
        return stdin, streams[1], streams[2]

    def open(self, state: State, path: str, flags: int) -> int:
        try:
            return self.workdir.open(state.cwd, path, flags)
        except PathRefused as refused:
            raise CommandFailed(str(refused)) from refused

    def execute(
        self,
        words: list[str],
        assignments: list[tuple[str, str]],
        state: State,
        streams: tuple[Stdin, Sink, Sink],
    ) -> int:
        name, args = words[0], words[1:]
        stdin, out, err = streams
        if name == "xargs":  # it names the command whose status it passed on (`decider`)
            return self.xargs(args, assignments, state, stdin, out, err)
        if name == "find" and not fanout.EXEC_ACTIONS.isdisjoint(args):
            return self.find_exec(args, assignments, state, stdin, out, err)
        status = self.dispatch(name, args, assignments, state, streams)
        self.decider = (name, status, status)
        return status

    def dispatch(
        self,
        name: str,
        args: list[str],
        assignments: list[tuple[str, str]],
        state: State,
        streams: tuple[Stdin, Sink, Sink],
    ) -> int:
        stdin, out, err = streams
        if name == "read":  # the one builtin a prefix assignment (IFS=,) reaches
            ifs = dict(assignments).get("IFS", state.variables.get("IFS", " \t\n"))
            return self.read(args, state, stdin, err, ifs)
        if name in BUILTINS:
            return self.builtin(name, args, state, stdin, out, err)
        if name not in BOX_COMMANDS and name not in PYTHON_COMMANDS:
            self.missing.append(name)
            err.write(
                f"{name}: command not found (not in the sandbox){did_you_mean(name)}\n".encode()
            )
            return 127
        return self.stage(name, args, assignments, state, stdin, out, err)

    # -- builtins

    def builtin(
        self, name: str, args: list[str], state: State, stdin: Stdin, out: Sink, err: Sink
    ) -> int:
        if name == ":":
            return 0
        if name in ("break", "continue"):
            if len(args) > 1 or (args and not (args[0].isdigit() and int(args[0]) >= 1)):
                err.write(f"{name}: {' '.join(args)}: loop count out of range\n".encode())
                return 1
            if not self.loops:
                err.write(
                    f"{name}: only meaningful in a `for', `while', or `until' loop\n".encode()
                )
                return 0
            raise LoopJump(name == "break", min(int(args[0]) if args else 1, self.loops))

        if name == "set":
            return self.set_options(args, state, err)
        if name == "exit":
            if not args:
                raise Exit(state.status)
            if len(args) > 1:
                err.write(b"exit: too many arguments\n")
                return 1
            if not re.fullmatch(r"[+-]?[0-9]+", args[0]):
                err.write(f"exit: {args[0]}: numeric argument required\n".encode())
                raise Exit(2)
            raise Exit(int(args[0]) & 0xFF)
        if name == "cd":
            if len(args) > 1:
                err.write(b"cd: too many arguments\n")
                return 1
            target = args[0] if args else ""
            if target == "-":
                err.write(b"cd: '-' is not supported in the sandbox\n")
                return 1
            try:
                state.cwd = self.workdir.directory(state.cwd, target) if target else ""
            except PathRefused as refused:
                err.write(f"cd: {refused}\n".encode())
                return 1
            return 0
        if name == "export":
            status = 0
            if not args:
                for key in sorted(state.exported):
                    value = state.variables.get(key, "")
                    out.write(f'declare -x {key}="{value}"\n'.encode())
            for arg in args:
                key, has_value, value = arg.partition("=")
                if not NAME.fullmatch(key):
                    err.write(f"export: `{arg}': not a valid identifier\n".encode())
                    status = 1
                    continue
                if has_value:
                    self.assign(state, key, value)
                state.exported.add(key)
            return status
        raise SandboxError(f"builtin {name} has no implementation")

    def set_options(self, args: list[str], state: State, err: Sink) -> int:
        """`set -e`, `set -u`, `set -o pipefail` and their spellings (`-euo pipefail`,
        `-o errexit`, `-o nounset`): options are only turned on; turning one off (`+e`) is
        refused, since a check's errexit is what makes every line count."""
        turned_on: set[str] = set()
        letters = {"e": "errexit", "u": "nounset"}
        pending = list(args)
        while pending:
            arg = pending.pop(0)
            if arg.startswith("+"):
                err.write(
                    f"set: {arg}: turning an option off is not supported in the sandbox\n".encode()
                )
                return 2
            if not arg.startswith("-") or arg in ("-", "--"):
                err.write(f"set: {arg}: the sandbox's set takes only -e, -u and -o NAME\n".encode())
                return 2
            for flag in arg[1:]:
                if flag == "o":
                    name = pending.pop(0) if pending else ""
                    if name not in ("errexit", "nounset", "pipefail"):
                        known = "the sandbox knows errexit, nounset, pipefail"
                        err.write(f"set: -o {name or '(none)'}: {known}\n".encode())
                        return 2
                    turned_on.add(name)
                elif flag in letters:
                    turned_on.add(letters[flag])
                else:
                    err.write(
                        f"set: -{flag}: the sandbox's set takes only -e, -u and -o NAME\n".encode()
                    )
                    return 2
        state.options = state.options | turned_on
        return 0

    def read(self, args: list[str], state: State, stdin: Stdin, err: Sink, ifs: str) -> int:
        """`read [-r] [NAME…]`: one line of stdin into the names (REPLY when none), cut at
        the characters of `ifs` as bash cuts it."""
        raw = bool(args) and args[0] == "-r"
        names = args[1:] if raw else args
        for name in names:
            if not NAME.fullmatch(name):
                message = (
                    "unsupported option (the sandbox has -r)"
                    if name.startswith("-")
                    else ("not a valid identifier")
                )
                err.write(f"read: `{name}': {message}\n".encode())
                return 2 if name.startswith("-") else 1
        line = self.read_line(stdin)
        if line is None:
            for name in names or ["REPLY"]:
                self.assign(state, name, "")
            return 1
        text = line.decode("utf-8", "replace")
        complete = text.endswith("\n")
        text = text[:-1] if complete else text
        if not raw:
            text = re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.DOTALL)
        if not names:
            self.assign(state, "REPLY", text)
            return 0 if complete else 1
        blanks = "".join(c for c in ifs if c in " \t\n")
        others = "".join(c for c in ifs if c not in " \t\n")
        text = text.strip(blanks) if blanks else text
        if not ifs or len(names) == 1:  # (re.split's maxsplit=0 would mean no bound)
            fields = [text]
        elif others:
            white = f"[{re.escape(blanks)}]*" if blanks else ""
            cut = f"{white}[{re.escape(others)}]{white}" + (
                f"|[{re.escape(blanks)}]+" if blanks else ""
            )
            fields = re.split(cut, text, maxsplit=len(names) - 1)
        else:
            fields = re.split(f"[{re.escape(blanks)}]+", text, maxsplit=len(names) - 1)
        fields = [] if fields == [""] else fields
        for index, name in enumerate(names):
            self.assign(state, name, fields[index] if index < len(fields) else "")
        return 0 if complete else 1

    def read_line(self, stdin: Stdin) -> bytes | None:
        if isinstance(stdin, Input):
            return stdin.line()
        if isinstance(stdin, bytes):
            end = stdin.find(b"\n")
            return (stdin if end < 0 else stdin[: end + 1]) or None
        # A `<` file is a regular one (confine refuses others): read a block, and seek back
        # to just past the line, so the next command reads on from there.
        line = bytearray()
        while True:
            self.tick()
            block = os.read(stdin, 1 << 16)
            if not block:
                break
            end = block.find(b"\n")
            if end >= 0:
                line += block[: end + 1]
                os.lseek(stdin, end + 1 - len(block), os.SEEK_CUR)
                break
            self.memory.take(len(block))
            line += block
        return bytes(line) or None
