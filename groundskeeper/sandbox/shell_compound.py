"""The sandbox shell's compound commands run: if, for, while/until, case, groups, `[[ … ]]`.

It owns `((…))` too, the loops (the step limit; the one place `break`/`continue` land) and the
tests of `[[ … ]]` (`=~` by box.wasm's regex stage); the lists inside them are `shell`'s.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import groundskeeper.sandbox.arith as arith
from groundskeeper.sandbox.confine import PathRefused
from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.shell_simple import SimpleCommands
from groundskeeper.sandbox.shell_stages import CommandFailed, LoopJump, State
from groundskeeper.sandbox.shell_streams import Capture, Input, Stdin, Stop
from groundskeeper.sandbox.tree import (
    Case,
    Compound,
    CondBinary,
    CondExpr,
    Conditional,
    CondLogic,
    CondNot,
    CondWord,
    For,
    Group,
    If,
    Lit,
    Loop,
    Word,
)

__all__ = ["CompoundCommands"]


class CompoundCommands(SimpleCommands):
    """The interpreter's compound-command layer."""

    def compound(
        self,
        command: Compound,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool,
    ) -> int:
        self.tick()
        self.last_sub_status.append(-1)
        self.memory.frames.append(0)
        opened: list[int] = []
        try:
            if command.redirects:
                try:
                    stdin, out, err = self.redirect(
                        command.redirects, state, stdin, out, err, opened
                    )
                except CommandFailed as failed:
                    err.write(f"sh: {failed.message}\n".encode())
                    return failed.status
            if isinstance(stdin, bytes) and stdin:
                stdin = Input(stdin)  # the commands inside read one stream between them
            return self.run_compound(command, state, stdin, out, err, errexit)
        finally:
            self.last_sub_status.pop()
            self.memory.held -= self.memory.frames.pop()
            for fd in opened:
                os.close(fd)

    def run_compound(
        self,
        command: Compound,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool,
    ) -> int:
        if isinstance(command, If):
            for condition, body in command.clauses:
                if self.body(condition, state, stdin, out, err, False) == 0:
                    return self.body(body, state, stdin, out, err, errexit)
            if command.otherwise is not None:
                return self.body(command.otherwise, state, stdin, out, err, errexit)
            state.status = 0
            return 0
        if isinstance(command, For):
            return self.for_loop(command, state, stdin, out, err, errexit)
        if isinstance(command, Loop):
            return self.while_loop(command, state, stdin, out, err, errexit)
        if isinstance(command, Case):
            try:
                subject = self.expand_one(command.word, state, err)
                for arm in command.arms:
                    for pattern in arm.patterns:
                        if self.pattern(pattern, state, err).matches(subject, self.tick):
                            if not arm.body.items:
                                state.status = 0
                                return 0
                            return self.body(arm.body, state, stdin, out, err, errexit)
            except CommandFailed as failed:
                err.write(f"sh: {failed.message}\n".encode())
                return failed.status
            state.status = 0
            return 0
        if isinstance(command, Group):
            if not command.subshell:
                return self.body(command.body, state, stdin, out, err, errexit)
            inner = state.copy()
            try:
                return self.script(command.body, inner, stdin, out, err, errexit=errexit)
            finally:
                self.give_back(inner)
        if isinstance(command, Conditional):
            try:
                return 0 if self.condition(command.expr, state, err) else 1
            except CommandFailed as failed:
                err.write(f"sh: {failed.message}\n".encode())
                return failed.status
        try:
            number = self.arithmetic(command.expr, state, err)
        except arith.ArithError as error:
            err.write(f"sh: ((: {error.message}\n".encode())
            return 1
        return 0 if number else 1

    # -- loops

    def for_loop(
        self,
        command: For,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool,
    ) -> int:
        values: list[str] = []
        try:
            for word in command.words:
                values.extend(self.expand_fields(word, state, err))
        except CommandFailed as failed:
            err.write(f"sh: {failed.message}\n".encode())
            return failed.status
        left = iter(values)

        def one_pass() -> int | None:
            value = next(left, None)
            if value is None:  # no step is counted for finding the values all used
                return None
            self.loop_step()
            self.assign(state, command.name, value)
            return self.body(command.body, state, stdin, out, err, errexit)

        return self.loop(state, one_pass)

    def while_loop(
        self,
        command: Loop,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool,
    ) -> int:
        """`while` and `until`: the condition is tested before each pass."""

        def one_pass() -> int | None:
            self.loop_step()
            tested = self.body(command.condition, state, stdin, out, err, False)
            if (tested == 0) == command.until:
                return None
            return self.body(command.body, state, stdin, out, err, errexit)

        return self.loop(state, one_pass)

    def loop(self, state: State, one_pass: Callable[[], int | None]) -> int:
        """Run a loop's passes until one says the loop is over (None); its status is the
        last body's. The one place `break N` and `continue N` land: a jump of one level ends
        this loop or goes on with its next pass, a jump of more leaves it for the one around."""
        status = 0
        self.loops += 1
        try:
            while True:
                try:
                    ran = one_pass()
                except LoopJump as jump:
                    if jump.levels > 1:
                        jump.levels -= 1
                        raise
                    status = 0
                    if jump.breaks:
                        break
                    continue
                if ran is None:
                    break
                status = ran
        finally:
            self.loops -= 1
        state.status = status
        return status

    def loop_step(self) -> None:
        self.tick()
        self.steps += 1
        if self.steps > self.limits.loop_steps:
            raise Stop(
                "loop-steps",
                f"loop step limit ({self.limits.loop_steps} iterations) reached: the command "
                "line was stopped (loops of one line run at most that many times in all)",
            )

    # -- [[ … ]]

    def condition(self, expr: CondExpr, state: State, err: Sink) -> bool:
        if isinstance(expr, CondLogic):
            left = self.condition(expr.left, state, err)
            if expr.op == "&&":
                return left and self.condition(expr.right, state, err)
            return left or self.condition(expr.right, state, err)
        if isinstance(expr, CondNot):
            return not self.condition(expr.inner, state, err)
        if isinstance(expr, CondWord):
            value = self.expand_one(expr.word, state, err)
            if expr.op == "-n":
                return value != ""
            if expr.op == "-z":
                return value == ""
            return self.file_test(expr.op, value, state)
        return self.compare(expr, state, err)

    def compare(self, expr: CondBinary, state: State, err: Sink) -> bool:
        op = expr.op
        if op in _NUMERIC and self.strict_negation:  # a check's run: numbers, never code
            a_text = self.number_text(expr.left, state, err, op)
            b_text = self.number_text(expr.right, state, err, op)
            return self.numeric(op, a_text, b_text, state)
        left = self.expand_one(expr.left, state, err)
        if op in ("==", "!="):
            matched = self.pattern(expr.right, state, err).matches(left, self.tick)
            return matched == (op == "==")
        if op == "=~":
            return self.regex_match(left, expr.right, state, err)
        right = self.expand_one(expr.right, state, err)
        if op in ("<", ">"):
            return left < right if op == "<" else left > right
        return self.numeric(op, left, right, state)

    def numeric(self, op: str, left: str, right: str, state: State) -> bool:
        try:
            a = self.evaluate(left, state)
            b = self.evaluate(right, state)
        except arith.ArithError as error:
            raise CommandFailed(error.message) from error
        return {
            "-eq": a == b,
            "-ne": a != b,
            "-lt": a < b,
            "-le": a <= b,
            "-gt": a > b,
            "-ge": a >= b,
        }[op]

    def number_text(self, word: Word, state: State, err: Sink, op: str) -> str:
        """An operand of `[[ A -eq B ]]` in a check: each expanded part must be a number.
        bash would evaluate `want` (a file's text) as the check's own variable, the hidden
        answer (adversary-21 F22); the author's literal expression (`2+2`) still counts."""
        segments = list(self.segments(word, state, err))
        texts = [text for text, _, _ in segments]
        aligned = len(segments) == len(word.parts)
        expanded = (
            [t for part, t in zip(word.parts, texts, strict=True) if not isinstance(part, Lit)]
            if aligned
            else (["".join(texts)] if any(not isinstance(p, Lit) for p in word.parts) else [])
        )
        for text in expanded:
            if not _NUMBER.fullmatch(text.strip()):
                raise CommandFailed(
                    f"`[[ … {op} … ]]` compares numbers, and an expanded value is {text!r}: a"
                    " check never reads expanded text as code (an arithmetic expression);"
                    ' compare it as text: `[ "$(cat FILE)" = "$want" ]`',
                    2,
                )
        return "".join(texts)

    def regex_match(self, text: str, word: Word, state: State, err: Sink) -> bool:
        """`[[ text =~ word ]]`, matched by box.wasm's "[[=~" (POSIX ERE, as bash's), so a
        pattern that takes long meets the run's fuel and deadline; quoted parts of the word
        match themselves."""
        ere = "".join(
            _ere_escape(value) if quoted else value
            for value, quoted, _ in self.segments(word, state, err)
        )
        found = Capture(self.limits.pipe, self.memory)
        complaint = Capture(self.limits.stream)
        subject = text.encode()
        try:
            status = self.stage("[[=~", [ere], [], state, subject, found, complaint)
            offsets = found.data.decode("ascii", "replace").split()
        finally:
            self.memory.hold(-len(found.data))
        if status not in (0, 1):
            why = complaint.data.decode("utf-8", "replace").strip() or f"status {status}"
            raise CommandFailed(why, 2)
        for key in [k for k in state.variables if k.startswith("BASH_REMATCH")]:
            del state.variables[key]
            self.memory.hold(-state.charged.pop(key, 0))
        if status == 1:
            return False
        spans = [(int(a), int(b)) for a, b in zip(offsets[::2], offsets[1::2], strict=True)]
        for index, (begin, end) in enumerate(spans):
            group = subject[begin:end].decode("utf-8", "replace") if begin >= 0 else ""
            self.assign(state, "BASH_REMATCH" if index == 0 else f"BASH_REMATCH[{index}]", group)
        return True

    def file_test(self, op: str, path: str, state: State) -> bool:
        if op != "-w":  # the tests that only look: the workdir's, noted in a read set
            return self.workdir.test(state.cwd, op, path)
        if self.workdir.reads is not None:
            self.workdir.reads.taint("-w")
        if not path:
            return False
        try:
            relative = self.workdir.resolve(state.cwd, path)
            real = self.workdir.host(relative)
            info = os.stat(real)
        except (PathRefused, OSError):
            return False
        return not self.unwritable(relative, info) and os.access(real, os.W_OK)

    def unwritable(self, relative: str, info: os.stat_result) -> bool:
        """A file the sandbox would refuse to write: a read-only run, the running plan, a
        protected input (by any name)."""
        fence = self.workdir.fence
        if self.read_only or fence.is_read_only_file(info):
            return True
        parent, _, name = relative.rpartition(os.sep)
        if not name:
            return False
        if fence.refusal(os.stat(self.workdir.host(parent)), name) is not None:
            return True
        return fence.rule_refusal(self.workdir.host(relative)) is not None


def _ere_escape(text: str) -> str:
    """Text an ERE matches literally (a quoted part of `=~`'s right side)."""
    return "".join("\\" + char if char in _ERE_SPECIAL else char for char in text)


_ERE_SPECIAL = frozenset(".[]()*+?{}|^$\\")
#: `[[ ]]`'s arithmetic comparisons, and what an expanded operand of one must be in a check
_NUMERIC = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NUMBER = re.compile(r"[+-]?[0-9]+")
