"""Which command names the sandbox can run, and what each one takes: the box.wasm commands,
the host builtins, and the commands another WASI module runs (`python3`/`python`: CPython,
see `cpython`; `micropython`, see `micropython`).

It owns the names (the box.wasm commands plus the host builtins) and one synopsis per command
(`COMMAND_SYNOPSES`), from which `sh --commands`, the author prompt's command list and the
"did you mean" of an unknown command are all made. It does not run anything. The box list
mirrors BOX_COMMANDS in box/box.h (a test keeps the two equal); a name in the list may still
answer 127 while its C source is unwritten, which is fail-closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from groundskeeper.fastclass import fastclass

# Keep in step with BOX_COMMANDS in groundskeeper/sandbox/box/box.h (`[` is `test`).
BOX_COMMANDS: frozenset[str] = frozenset(
    {
        "test", "[", "true", "false", "echo", "printf", "cat", "head", "tail", "wc",
        "grep", "sed", "ls", "sort", "uniq", "cut", "tr", "cmp", "diff", "sha256sum",
        "mkdir", "cp", "mv", "rm", "touch", "seq", "sleep", "basename", "dirname",
        "pwd", "env", "expr", "find",
        "tee", "stat", "date", "paste", "comm", "nl", "rev", "base64", "md5sum", "sha1sum",
        "sha512sum", "realpath", "readlink", "du",
        "awk",
        "jq",
    }
)  # fmt: skip

# Run by the interpreter itself, because they change the shell's own state.
BUILTINS: frozenset[str] = frozenset(
    {"cd", ":", "exit", "export", "set"}
    | {"break", "continue", "read", "xargs"}  # xargs: its commands run as stages of their own
)

# Run by another WASI module, not by box.wasm: CPython (groundskeeper/sandbox/cpython.py) as
# python3 and python, MicroPython (groundskeeper/sandbox/micropython.py) as micropython.
CPYTHON_COMMANDS: frozenset[str] = frozenset({"python3", "python"})
PYTHON_COMMANDS: frozenset[str] = CPYTHON_COMMANDS | {"micropython"}

COMMANDS: frozenset[str] = BOX_COMMANDS | BUILTINS | PYTHON_COMMANDS

# What a command can start. `xargs` and `find -exec` start box.wasm programs only (a builtin
# answers 126, anything else 127, python3 included: CPython is not a box.wasm program); the
# sandbox's `env` starts nothing (125); `nice`, `timeout`, `command`, `nohup`, `stdbuf` are not
# in the sandbox at all. The interpreter refuses by `launch_refusal` and lint (T004) reads it.
LAUNCHERS: Mapping[str, frozenset[str]] = MappingProxyType(
    {"xargs": BOX_COMMANDS, "find -exec": BOX_COMMANDS, "env": frozenset()}
)


def launch_refusal(launcher: str, name: str) -> tuple[int, str] | None:
    """None when `launcher` (a key of LAUNCHERS) can start `name`, else the status the
    sandbox gives back and what it says (after `LAUNCHER: `)."""
    if name in LAUNCHERS.get(launcher, frozenset()):
        return None
    if launcher == "env":
        return 125, (
            f"cannot run '{name}': running a command from env is not possible in the sandbox"
            f" (use VAR=value {name} ... in the shell instead)"
        )
    if name in BUILTINS:
        return 126, (
            f"{name}: a shell builtin cannot run under {launcher}; only the sandbox's commands can"
        )
    if name in PYTHON_COMMANDS:
        return 127, (
            f"{name}: {launcher} cannot start it: it starts only the sandbox's box.wasm commands;"
            f" run `{name}` directly, or in a `for` loop"
        )
    return 127, f"{name}: command not found (not in the sandbox)"


# The statuses that say, for these commands, that they could not answer (a missing or
# unreadable file, a bad option or expression) rather than "no" (1). A check that negates one
# (`! grep -q ERROR build.log`) would read such an error as a pass; in a check the interpreter
# fails it there instead (`negation_error`), and lint reads the same table. Any command's
# 126 (cannot run), 127 (not found) and 128 or more (stopped) are errors too.
ERROR_STATUS: Mapping[str, range] = MappingProxyType(
    {
        "grep": range(2, 126), "egrep": range(2, 126), "fgrep": range(2, 126),
        "zgrep": range(2, 126), "cmp": range(2, 126), "diff": range(2, 126),
        "test": range(2, 126), "[": range(2, 126), "expr": range(2, 126),
    }
)  # fmt: skip


def negation_error(name: str, status: int) -> str | None:
    """Why `status`, given back by `name` ("" when no one command gave it), is an error and
    not a "no" a negation may turn into a pass; None when it may be a "no"."""
    what = f"`{name}`" if name else "the negated command"
    if status == 126:
        why = "could not be run (status 126)"
    elif status == 127:
        why = "was not found (status 127)"
    elif status >= 128:
        why = f"was stopped (status {status})"
    elif name in ERROR_STATUS and status in ERROR_STATUS[name]:
        why = (
            f"exited with status {status}, an error (a missing or unreadable file, a bad"
            " option or expression)"
        )
    else:
        return None
    return f'{what} {why}, not a "no": in a check `!` passes only on a "no"'


@fastclass(frozen=True, slots=True)
class Synopsis:
    """One line on what a command does, and the options it supports (as a user writes them)."""

    summary: str
    options: tuple[str, ...] = ()


def _s(summary: str, *options: str) -> Synopsis:
    return Synopsis(summary, options)


# Every command the sandbox has; an entry is shown only while its name is in COMMANDS.
COMMAND_SYNOPSES: Mapping[str, Synopsis] = MappingProxyType(
    {
        # builtins: the interpreter's own
        "cd": _s("change the shell's directory (inside the workdir)"),
        ":": _s("do nothing, successfully"),
        "exit": _s("end the command line with a status", "[N]"),
        "set": _s("turn on shell options (never off)", "-e", "-u", "-o errexit|nounset|pipefail"),
        "export": _s("mark variables for the commands' environment", "NAME[=VALUE]"),
        "read": _s("read a line of stdin into variables (honours IFS)", "-r", "NAME…"),
        "break": _s("leave the innermost loop (or N loops)", "[N]"),
        "continue": _s("next round of the innermost loop (or the Nth)", "[N]"),
        # conditions and output
        "test": _s("evaluate a condition (bash's rules)", "-e -f -d -s -r -w -x -L -z -n",
                   "= != < >", "-eq -ne -lt -le -gt -ge", "-nt -ot", "! -a -o ( )"),
        "[": _s("test, written [ EXPR ] (the options of test)"),
        "true": _s("succeed"),
        "false": _s("fail (status 1)"),
        "echo": _s("print arguments (bash's builtin)", "-n", "-e", "-E"),
        "printf": _s("formatted output (bash's builtin)", "%s %b %c %d %i %u %x %X %o %f %e %g",
                     "widths and precisions", "\\ escapes"),
        "seq": _s("print a sequence of numbers", "-w", "-s SEP", "-f FORMAT"),
        "sleep": _s("pause (the deadline still applies)", "N[smhd]"),
        "expr": _s("evaluate an expression", "| & = != < <= > >= + - * / %", ": (BRE match)",
                   "length substr index match"),
        "env": _s("print the environment (cannot run a command)", "-i", "-u NAME", "-0",
                  "NAME=VALUE"),
        "pwd": _s("print the current directory (/workdir is the workdir)"),
        "date": _s("print a date (the sandbox's clock is UTC)", "+FORMAT", "-u",
                   "-r FILE", "-d @SECONDS", "-I[TIMESPEC]", "-R"),
        # reading text
        "cat": _s("concatenate files", "-n", "-b", "-s", "-E"),
        "head": _s("first lines or bytes", "-n [-]N", "-c [-]N", "-q", "-v"),
        "tail": _s("last lines or bytes", "-n [+]N", "-c [+]N", "-q", "-v"),
        "wc": _s("count lines, words, bytes", "-l", "-w", "-c", "-m", "-L"),
        "grep": _s("print lines matching patterns (no -P: use -E)", "-E", "-F", "-G",
                   "-e PAT", "-i", "-v", "-x", "-w", "-c", "-l", "-L", "-n", "-o", "-q",
                   "-s", "-h", "-H", "-r", "-m N", "-A N", "-B N", "-C N"),
        "sed": _s("stream editor", "-n", "-E/-r", "-e SCRIPT", "-s", "-i[SUFFIX]",
                  "s y p P d D n N h H g G x q Q = { } and addresses"),
        "sort": _s("sort lines", "-n", "-r", "-u", "-f", "-b", "-s", "-c", "-k POS1[,POS2]",
                   "-t C", "-o FILE"),
        "uniq": _s("collapse adjacent equal lines", "-c", "-d", "-D", "-u", "-i", "-f N",
                   "-s N", "-w N"),
        "cut": _s("select parts of lines", "-f LIST", "-d C", "-s", "-c LIST", "-b LIST",
                  "--complement", "--output-delimiter=S"),
        "tr": _s("translate or delete bytes", "-d", "-s", "-c", "-t", "[:class:]"),
        "paste": _s("merge lines of files", "-d LIST", "-s"),
        "comm": _s("compare two sorted files", "-1", "-2", "-3", "--total",
                   "--output-delimiter=S", "--check-order", "--nocheck-order"),
        "nl": _s("number lines", "-b a|t|n|pBRE", "-n ln|rn|rz", "-w N", "-s SEP", "-v N",
                 "-i N"),
        "rev": _s("reverse each line's characters"),
        "base64": _s("encode or decode base64", "-d", "-i", "-w COLS"),
        "cmp": _s("compare two files byte by byte", "-s", "-l", "-b", "-n N"),
        "diff": _s("compare files line by line", "-u", "-U N", "-q", "-s"),
        "md5sum": _s("MD5 digests", "-c", "--quiet", "--status", "--strict", "-w"),
        "sha1sum": _s("SHA-1 digests", "-c", "--quiet", "--status", "--strict", "-w"),
        "sha256sum": _s("SHA-256 digests", "-c", "--quiet", "--status", "--strict", "-w"),
        "sha512sum": _s("SHA-512 digests", "-c", "--quiet", "--status", "--strict", "-w"),
        # files and paths
        "ls": _s("list directory contents", "-a", "-A", "-d", "-l", "-h", "-r", "-R", "-t",
                 "-S", "-1"),
        "find": _s("walk directory trees", "-name", "-iname", "-path", "-type f|d|l",
                   "-empty", "-newer F", "-maxdepth N", "-mindepth N", "-depth", "-print",
                   "-print0", "-delete", "-exec CMD {} ;", "-exec CMD {} +", "! -a -o ( )"),
        "stat": _s("file facts", "-c FORMAT", "--printf FORMAT", "-L",
                   "%s %Y %y %n %F %i %h"),
        "du": _s("apparent sizes (no block counts in WASI)", "-b", "--apparent-size", "-s",
                 "-a", "-c", "-d N", "-k", "-m"),
        "realpath": _s("resolved absolute path", "-e", "-m", "-s", "-q", "-z",
                       "--relative-to=DIR"),
        "readlink": _s("a link's target, or the resolved path", "-f", "-e", "-m", "-n", "-q",
                       "-v", "-z"),
        "basename": _s("strip directory and suffix", "-a", "-s SUFFIX"),
        "dirname": _s("strip the last component"),
        "mkdir": _s("make directories", "-p", "-v"),
        "touch": _s("create files or update their times", "-c", "-a", "-m", "-r REF"),
        "cp": _s("copy files", "-r", "-f", "-n", "-p", "-a", "-v", "-t DIR", "-T"),
        "mv": _s("move files", "-f", "-n", "-v", "-t DIR", "-T"),
        "rm": _s("remove files", "-r", "-f", "-d", "-v"),
        "tee": _s("copy stdin to stdout and files", "-a"),
        # other languages, and the command that runs commands
        "awk": _s("POSIX awk", "-F FS", "-v NAME=VALUE", "BEGIN/END", "NR NF FS OFS $N",
                  "arrays and in", "printf", "length substr index split sub gsub match sprintf"
                  " tolower toupper", "~ !~ regex matching", "getline"),
        "jq": _s("JSON processor (the core language)", "-r", "-c", "-s", "-n", "-e",
                 "--arg NAME VALUE", ".a.b .[n] .[] ? | , {} [] \\(…)",
                 "select map length keys has type add any all min max sort sort_by unique"
                 " group_by to_entries from_entries test", "and or not"),
        "xargs": _s("run a command per batch of input words", "-n N", "-I {}", "-0"),
        "python3": _s("CPython 3.12 with its standard library and pytest (pure Python only:"
                      " no C extensions, threads, subprocesses or sockets)", "-c CODE",
                      "-m MODULE (pytest, unittest, doctest, …)", "SCRIPT", "-"),
        "python": _s("CPython, as python3", "-c CODE", "-m MODULE", "SCRIPT"),
        "micropython": _s("MicroPython, a small Python 3 that starts in milliseconds (no"
                          " pathlib, no -m, no third-party packages)", "-c CODE", "SCRIPT"),
    }
)  # fmt: skip


def available_synopses() -> dict[str, Synopsis]:
    """The synopses of the commands the sandbox has now, by name, sorted."""
    return {name: COMMAND_SYNOPSES[name] for name in sorted(COMMANDS) if name in COMMAND_SYNOPSES}


def command_reference() -> str:
    """Markdown lines `name — synopsis (options)`, one per command the sandbox has."""
    lines = []
    for name, synopsis in available_synopses().items():
        options = f" ({', '.join(synopsis.options)})" if synopsis.options else ""
        lines.append(f"- `{name}` — {synopsis.summary}{options}")
    return "\n".join(lines) + "\n"


_LONGEST_NAME = max(map(len, COMMANDS))


def closest_command(name: str) -> str | None:
    """The command the sandbox has that `name` most likely meant, or None.

    A path (`/usr/bin/grep`) means its last component; two neighbouring letters swapped
    (`gerp`) mean the command with them in order; otherwise the nearest spelling by difflib's
    ratio, at least 0.7 (at 0.6, `bash` would be offered `base64`)."""
    base = name.rsplit("/", 1)[-1]
    if base in COMMANDS:
        return base if base != name else None
    if len(base) > _LONGEST_NAME + 2:
        # nothing this long is a slip of the fingers, and trying every swap of a huge word
        # (a command name can come from `$(…)`) would cost the host quadratic time
        return None
    for i in range(len(base) - 1):
        swapped = base[:i] + base[i + 1] + base[i] + base[i + 2 :]
        if swapped in COMMANDS:
            return swapped
    import difflib  # only for a command the sandbox does not have (with heapq: ~1.5 ms)

    found = difflib.get_close_matches(base, sorted(COMMANDS), n=1, cutoff=0.7)
    return found[0] if found else None


#: What to write instead of a common command the sandbox lacks, where no close name helps
ABSENT_ADVICE: Mapping[str, str] = MappingProxyType(
    {
        "mktemp": (
            "for a temporary file, write to a name of your own beside the target and rename"
            " it (`echo … > out/.report.tmp && mv out/.report.tmp out/report.txt`); for a"
            " directory, `mkdir out/.work`"
        ),
    }
)


def did_you_mean(name: str) -> str:
    """ "; did you mean CMD?" for an unknown command with a close one, what to write
    instead for a common one the sandbox lacks (`ABSENT_ADVICE`), else ""."""
    advice = ABSENT_ADVICE.get(name.rsplit("/", 1)[-1])
    if advice is not None:
        return f"; {advice}"
    closest = closest_command(name)
    return f"; did you mean {closest}?" if closest else ""
