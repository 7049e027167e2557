"""What `xargs` and `find … -exec` would start: the command lines, planned on the host.

It owns reading their options and input into lists of argv; the interpreter runs each argv as
a box.wasm stage of its own (the same limits, and a bound on how many) and merges the
statuses. It runs nothing itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from groundskeeper.errors import GroundskeeperError
from groundskeeper.fastclass import fastclass

# Bytes of arguments one command started by `xargs` (or `find -exec … +`) is given at most;
# more input makes more commands, as GNU xargs does at its own (larger) bound.
ARG_BYTES = 128 * 1024
EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_OTHER_ACTIONS = frozenset({"-print", "-print0", "-delete", "-printf", "-fprint", "-ls"})
_DELIMITERS = {"\\n": "\n", "\\t": "\t", "\\0": "\0", "\\\\": "\\"}


class FanoutError(GroundskeeperError):
    """Options or input the command refuses: `message` for stderr, `status` to return."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@fastclass(frozen=True)
class XargsOptions:
    command: list[str]  # the command and its initial arguments
    nul: bool  # -0
    no_empty_run: bool  # -r
    per_run: int | None  # -n
    replace: str | None  # -I
    delimiter: str | None  # -d


def _usage(message: str) -> FanoutError:
    return FanoutError(
        f"xargs: {message}\nusage: xargs [-0] [-r] [-n N] [-I R] [-d C] [CMD [ARG…]]", 2
    )


def xargs_options(args: list[str]) -> XargsOptions:
    """The options of `xargs ARGS`; FanoutError for one the sandbox does not have."""
    nul = no_empty_run = False
    per_run: int | None = None
    replace: str | None = None
    delimiter: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        flag, attached = arg[:2], arg[2:]
        if flag in ("-n", "-I", "-d") or arg in ("--max-args", "--replace", "--delimiter"):
            if attached:
                value = attached
                index += 1
            elif index + 1 < len(args):
                value = args[index + 1]
                index += 2
            else:
                raise _usage(f"option requires an argument -- '{arg.lstrip('-')}'")
            if flag == "-n":
                if not value.isdigit() or int(value) < 1:
                    raise FanoutError(f"xargs: value {value} for -n option should be >= 1", 1)
                per_run = int(value)
            elif flag == "-I":
                replace = value
            else:
                delimiter = _DELIMITERS.get(value, value)
                if len(delimiter) != 1:
                    raise _usage(f"-d takes one character (or \\n, \\t, \\0), not {value!r}")
            continue
        if arg in ("-0", "--null"):
            nul = True
        elif arg in ("-r", "--no-run-if-empty"):
            no_empty_run = True
        else:
            cluster = arg[1:]
            if cluster and all(c in "0r" for c in cluster):
                nul = nul or "0" in cluster
                no_empty_run = no_empty_run or "r" in cluster
            else:
                raise _usage(f"unsupported option {arg} (the sandbox has -0 -r -n -I -d)")
        index += 1
    command = args[index:] or ["echo"]
    return XargsOptions(command, nul, no_empty_run, per_run, replace, delimiter)


def xargs_runs(options: XargsOptions, text: str) -> Iterator[list[str]]:
    """The command lines xargs runs for `text` on stdin, one at a time (the input may hold
    millions of items: none is built before its turn). FanoutError from the iteration for
    input xargs refuses. Without -r or -I, one run without arguments when there are none."""
    command = options.command
    items = _items(options, text)
    if options.replace is not None:
        for item in items:
            argv = [a.replace(options.replace, item) for a in command]
            if sum(len(a.encode()) + 1 for a in argv) > ARG_BYTES:
                raise FanoutError("xargs: argument line too long", 1)
            yield argv
        return
    batch: list[str] = []
    size = 0
    ran = False
    for item in items:
        if batch and (
            (options.per_run is not None and len(batch) >= options.per_run)
            or size + len(item) + 1 > ARG_BYTES
        ):
            yield command + batch
            ran = True
            batch, size = [], 0
        batch.append(item)
        size += len(item.encode()) + 1
    if batch or (not ran and not options.no_empty_run):
        yield command + batch


def _items(options: XargsOptions, text: str) -> Iterator[str]:
    if options.nul or options.delimiter is not None:
        yield from _delimited(text, "\0" if options.nul else options.delimiter or "\n")
    elif options.replace is not None:
        for line in _delimited(text, "\n"):
            line = line.lstrip(" \t")
            if line:
                yield line
    else:
        yield from _blank_separated(text)


def _delimited(text: str, separator: str) -> Iterator[str]:
    """Items ended by `separator` (the last one may lack it)."""
    start = 0
    while start < len(text):
        end = text.find(separator, start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


# xargs' default input, a run at a time (a huge item is one regex step, not a Python loop):
# plain characters, a quoted string (never across a newline), an escaped character, blanks,
# or a quote that is not closed on its line.
_XARGS_TOKEN = re.compile(
    r"""([^ \t\n'"\\]+)|'([^'\n]*)'|"([^"\n]*)"|\\(.)|([ \t\n]+)|(['"\\])""", re.S
)


def _blank_separated(text: str) -> Iterator[str]:
    """xargs' default input: items cut at blanks and newlines, with '…', "…" and \\x."""
    current: list[str] = []
    started = False
    for match in _XARGS_TOKEN.finditer(text):
        plain, single, double, escaped, blanks, stray = match.groups()
        if blanks is not None:
            if started:
                yield "".join(current)
                current, started = [], False
            continue
        if stray is not None:
            if stray == "\\":  # a backslash at the very end stands for itself
                current.append(stray)
                started = True
                continue
            kind = "single" if stray == "'" else "double"
            raise FanoutError(
                f"xargs: unmatched {kind} quote; by default quotes are special to xargs "
                "unless you use the -0 option",
                1,
            )
        current.append(next(part for part in (plain, single, double, escaped) if part is not None))
        started = True
    if started:
        yield "".join(current)


@fastclass(frozen=True)
class FindExec:
    """`find` split for the host: `find_args` end in `-print0` where `-exec` stood; each
    found name goes into `template` at `{}` (`batched`: `{} +`, many names a command)."""

    find_args: list[str]
    template: list[str]
    batched: bool


def split_find(args: list[str]) -> FindExec | None:
    """The `-exec … ;` / `-exec … {} +` of `find ARGS`, or None when it has none."""
    if not any(arg in EXEC_ACTIONS for arg in args):
        return None
    found: FindExec | None = None
    before: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-execdir", "-ok", "-okdir"):
            raise FanoutError(
                f"find: {arg} is not supported in the sandbox; use -exec CMD {{}} \\; "
                "(names are given relative to the starting point)",
                2,
            )
        if arg != "-exec":
            if arg in _OTHER_ACTIONS and found is None and any(a == "-exec" for a in args):
                raise _find_mixed(arg)
            if found is not None:
                raise FanoutError(
                    f"find: '{arg}' after -exec is not supported in the sandbox; put the "
                    "tests before -exec, and -exec last",
                    2,
                )
            before.append(arg)
            index += 1
            continue
        if found is not None:
            raise FanoutError(
                "find: one -exec per find in the sandbox; run a second find for the other",
                2,
            )
        end = index + 1
        batched = False
        while end < len(args):
            if args[end] == ";":
                break
            if args[end] == "+" and args[end - 1] == "{}" and end - 1 > index + 1:
                batched = True
                break
            end += 1
        else:
            raise FanoutError("find: missing argument to `-exec'", 1)
        template = args[index + 1 : end - 1 if batched else end]
        if not template:
            raise FanoutError("find: missing argument to `-exec'", 1)
        found = FindExec([], template, batched)
        index = end + 1
    assert found is not None
    return FindExec([*before, "-print0"], found.template, found.batched)


def _find_mixed(action: str) -> FanoutError:
    return FanoutError(
        f"find: {action} together with -exec is not supported in the sandbox; use -exec "
        "alone, or run two commands",
        2,
    )


def found_names(data: bytes | bytearray) -> Iterator[str]:
    """The names in `find -print0`'s output, one at a time."""
    start = 0
    while start < len(data):
        end = data.find(b"\0", start)
        end = len(data) if end < 0 else end
        if end > start:
            yield data[start:end].decode("utf-8", "replace")
        start = end + 1


def batches(names: Iterator[str]) -> Iterator[list[str]]:
    """Names for `-exec … {} +`, cut where a command's arguments would pass ARG_BYTES."""
    batch: list[str] = []
    size = 0
    for name in names:
        if batch and size + len(name) + 1 > ARG_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(name)
        size += len(name.encode()) + 1
    if batch:
        yield batch
