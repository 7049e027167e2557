"""Which directories a check lists to choose the file it reads (`K=$(ls keys | head -n 1)`):
one reading for lint (T033) and the run (`acceptance.check_inputs.made_side`)."""

from __future__ import annotations

import functools
import posixpath

from groundskeeper.plan.spec import TaskSpec

__all__ = ["listed_directories"]


def listed_directories(task: TaskSpec) -> tuple[str, ...]:
    """The workdir directories (never its top) the task's check lists inside a `$(…)` to
    choose a name — `K=$(ls keys | head -n 1)`, `$(find golden -name '*.txt')`,
    `$(echo keys/*)` — so that a file a worker adds there can become what the check reads
    (the answer key it compares against). A `for f in D/*` loop, which reads every file,
    is not one."""
    check = task.check
    return () if check is None else _listed_of(check.text)


@functools.lru_cache(maxsize=1024)
def _listed_of(text: str) -> tuple[str, ...]:
    from groundskeeper.sandbox import ShellSyntaxError, parse
    from groundskeeper.sandbox.command_options import parse_options
    from groundskeeper.sandbox.tree import CommandSub, simple_commands

    try:
        script = parse(text)
    except ShellSyntaxError:
        return ()
    found: list[str] = []

    def directory(name: str | None, glob: bool) -> None:
        if name is None:
            return
        if glob:
            if not any(c in name for c in "*?["):
                return
            name = posixpath.dirname(name)
        name = posixpath.normpath(name.rstrip("/") or ".")
        if name not in (".", "") and not name.startswith(("/", "..")):
            found.append(name)

    for command in simple_commands(script):
        for word in (*command.words, *(a.value for a in command.assignments)):
            for part in word.parts:
                if not isinstance(part, CommandSub):
                    continue
                inners = list(simple_commands(part.script))
                if any(c.words and c.words[0].literal() == "wc" for c in inners):
                    continue  # `$(ls out | wc -l)` counts the files: it names none
                for inner in inners:
                    words = [w.literal() for w in inner.words]
                    if not words:
                        continue
                    for written in words[1:]:
                        directory(written, glob=True)
                    if words[0] == "ls":
                        parsed = parse_options("ls", words[1:])
                        for i in parsed.operands if parsed is not None else ():
                            directory(words[1 + i], glob=False)
                    elif words[0] == "find":
                        for written in words[1:]:
                            if written is None or written.startswith(("-", "(", "!")):
                                break
                            directory(written, glob=False)
    return tuple(dict.fromkeys(found))
