"""The programs a command line runs from the workdir, read from its text: the script an
interpreter runs (`python3 X.py`, `sh X`, `bash X`, `. X`, `python3 < X`), a module
`python3 -m mod` finds in the workdir, and a command word that names a workdir file (`./x`,
`x.sh`: anything that is not a sandbox command) — for every stage of every pipeline and list.

One reading for the runtime and lint: evidence (`acceptance.evidence`) refuses a quote whose
program the worker wrote before it ran, and lint (T027) warns when an `output-of` pattern's
program is a workdir file the worker could rewrite. It does not decide what a program being
written means; it only names which files are the programs.
"""

from __future__ import annotations

import functools

from groundskeeper.fastclass import fastclass
from groundskeeper.path_patterns import normal_path

__all__ = [
    "INTERPRETERS",
    "Program",
    "checker_named",
    "command_programs",
    "compares_its_input",
    "judged_programs",
    "judged_programs_given",
]

_PYTHONS = frozenset({"python", "python3", "micropython"})
_SHELLS = frozenset({"sh", "bash", "dash", "ksh", "zsh"})
_SOURCES = frozenset({".", "source"})
#: Commands whose operand (or standard input) is a program they run.
INTERPRETERS = _PYTHONS | _SHELLS | _SOURCES
_UNREAD = "\0"  # a word the line does not spell out (an expansion, a glob): no word holds NUL
_PYTHON_ARGUMENT_OPTIONS = frozenset("WXQ")  # `-W arg`, `-X opt`: their argument is no script


@fastclass(frozen=True, slots=True)
class Program:
    """A program a stage runs: `paths` are the workdir files (relative, `/`-separated) any of
    which can be it (one for a script; a module's candidates for `-m`); `how` says how the
    stage names it: `script`, `module`, `command`, `stdin`."""

    command: str
    paths: tuple[str, ...]
    how: str


def command_programs(cmd: str) -> tuple[Program, ...] | str:
    """Every workdir program the line runs, or why that cannot be told (a line that does not
    parse, a program named through an expansion or a glob, a path outside the workdir, an
    interpreter reading its program from a pipe)."""
    from groundskeeper.sandbox.registry import COMMANDS
    from groundskeeper.sandbox.syntax import ShellSyntaxError, parse, simple_commands

    try:
        script = parse(cmd)
    except ShellSyntaxError as exc:
        return f"`{_short(cmd)}` does not parse ({exc})"
    found: list[Program] = []
    for command in simple_commands(script):
        if not command.words:
            continue
        words: list[str] = []
        for word in command.words:
            text = word.literal()
            # a word past the program's own may expand: only the words read below must not
            words.append(_UNREAD if text is None or word.has_glob() else text)
        stage = " ".join(w if w != _UNREAD else "…" for w in words)
        program = _stage_program(words, command, COMMANDS)
        if isinstance(program, str):
            return f"`{_short(stage)}` {program}"
        if program is None:
            continue
        how, named = program
        paths = _candidates(how, named)
        if paths is None:
            return f"`{_short(stage)}` names its program `{named}`, outside the workdir"
        found.append(Program(stage, paths, how))
    return tuple(found)


def _stage_program(
    words: list[str], command: object, commands: frozenset[str]
) -> tuple[str, str] | str | None:
    """(how, the name as written) of the stage's program; None: it runs no workdir program;
    a str: why it cannot be told."""
    name = words[0]
    if name == _UNREAD:
        return "names its command through an expansion or a glob"
    if name in _PYTHONS:
        return _operand(words, command, _python_options)
    if name in _SHELLS:
        return _operand(words, command, _shell_options)
    if name in _SOURCES:
        if len(words) < 2:
            return None
        return (
            "names its script through an expansion or a glob"
            if words[1] == _UNREAD
            else ("script", words[1])
        )
    if "/" in name or name not in commands:
        return ("command", name)
    return None


def _python_options(words: list[str]) -> tuple[str, str] | str | None:
    """python's operand: `-m mod`, a script, `-c` code (no file), or standard input."""
    i = 1
    while i < len(words):
        word = words[i]
        if word == _UNREAD:
            return "names its script through an expansion or a glob"
        if word == "--":
            return _named("script", words, i + 1)
        if word == "-" or not word.startswith("-"):
            return ("stdin", "") if word == "-" else ("script", word)
        for j, letter in enumerate(word[1:], start=1):
            rest = word[j + 1 :]
            if letter == "c":
                return None  # the program is the command's own text
            if letter == "m":
                return ("module", rest) if rest else _named("module", words, i + 1)
            if letter in _PYTHON_ARGUMENT_OPTIONS:
                i += 0 if rest else 1
                break
        i += 1
    return ("stdin", "")


def _shell_options(words: list[str]) -> tuple[str, str] | str | None:
    """a shell's operand: a script, `-c` code (no file), or standard input (`-s`, none)."""
    i = 1
    while i < len(words):
        word = words[i]
        if word == _UNREAD:
            return "names its script through an expansion or a glob"
        if word == "--":
            return _named("script", words, i + 1) if i + 1 < len(words) else ("stdin", "")
        if not word.startswith(("-", "+")) or word in ("-", "+"):
            return ("stdin", "") if word in ("-", "+") else ("script", word)
        letters = word[1:]
        if "c" in letters:
            return None
        if "s" in letters:
            return ("stdin", "")
        if letters in ("o", "O"):
            i += 1  # `-o errexit`: its argument is no script
        i += 1
    return ("stdin", "")


def _named(how: str, words: list[str], at: int) -> tuple[str, str] | str:
    if at >= len(words):
        return ("stdin", "") if how == "script" else "runs `-m` with no module"
    if words[at] == _UNREAD:
        return f"names its {how} through an expansion or a glob"
    return (how, words[at])


def _operand(words: list[str], command: object, read: object) -> tuple[str, str] | str | None:
    """The interpreter's program; one it reads from standard input is the file a `<`
    redirection names (a here-document is the command's own text; a pipe cannot be told)."""
    from groundskeeper.sandbox.tree import SimpleCommand

    assert callable(read) and isinstance(command, SimpleCommand)
    found: tuple[str, str] | str | None = read(words)
    if not isinstance(found, tuple) or found[0] != "stdin":
        return found
    for redirect in command.redirects:
        if redirect.fd != 0:
            continue
        if redirect.op in ("<<", "<<<"):
            return None  # the program is the command's own text
        if redirect.op == "<" and redirect.target is not None:
            target = redirect.target.literal()
            if target is None or redirect.target.has_glob():
                return "reads its program from a file named through an expansion or a glob"
            return ("stdin", target)
    return "reads its program from standard input, which the line does not name"


def _candidates(how: str, named: str) -> tuple[str, ...] | None:
    """The workdir paths the program can be; None when it is outside the workdir."""
    if how == "module":
        parts = named.split(".")
        if not all(p and "/" not in p for p in parts):
            return None
        base = "/".join(parts)
        packages = ["/".join(parts[:n]) + "/__init__.py" for n in range(1, len(parts))]
        # sources only: the sandbox's Python never imports a `.pyc` or `.mpy` without its
        # source (its site start-up; micropython.py), so no bytecode file can be the module
        return (f"{base}.py", f"{base}/__init__.py", f"{base}/__main__.py", *packages)
    path = normal_path(named)
    return None if path is None else (path,)


#: Words of a module's name (or a directory's above it) that make it the tests' helper,
#: data or judge, not the code under test.
HELPER_WORDS = frozenset(
    {"test", "tests", "testing", "testkit", "testutil", "testutils", "testlib", "testhelpers",
     "testsupport", "expected", "expectation", "expectations", "golden", "goldens", "fixture",
     "fixtures", "assertion", "assertions", "asserts", "oracle", "oracles", "reference",
     "references", "refimpl", "judge", "judges", "judging", "checker", "checkers",
     "verify", "verifier", "verifiers", "verification", "grader", "graders", "grading",
     "validator", "validators", "groundtruth", "truth"}
)  # fmt: skip
#: and, for a program whose output a comparison judges, the words of a checker's name
_CHECKER_WORDS = HELPER_WORDS | {"check", "checks", "checking", "grade", "score", "scorer"}


def checker_named(source: str) -> bool:
    """Whether a module's name says it is the tests' helper or data (`testkit.py`,
    `expected_values.py`, `test_helpers.py`): a word of `HELPER_WORDS` in its stem."""
    stem = source.rsplit("/", 1)[-1].split(".", 1)[0].casefold()
    if stem == "__init__":
        stem = source.rsplit("/", 2)[-2].casefold() if source.count("/") else ""
    return any(w in HELPER_WORDS for w in _words(stem))


def _words(name: str) -> list[str]:
    return [w for w in name.replace("-", "_").split("_") if w]


#: comparers whose status is 0 only when their standard input equals a file (`diff` by lines)
_COMPARERS = frozenset({"diff", "cmp"})


def compares_its_input(command: object) -> bool:
    """Whether a pipeline's last stage compares all of its standard input with a file:
    `diff - F`, `diff F -`, `cmp - F`, `cmp F` (cmp reads its input for a missing second
    operand), `/dev/stdin` for `-`, the options before them read by the sandbox's own option
    table. A program before such a stage that fails prints what it printed so far, which the
    comparison must still find whole and equal (the docs' case-file loop, `python3 solve.py
    < "$t" | diff - "${t%.in}.out"`); `cmp -n N` compares a part, and is not one. One reading
    for lint (T005) and for what a check's programs are (`judged_programs`)."""
    from groundskeeper.sandbox.command_options import parse_options
    from groundskeeper.sandbox.tree import SimpleCommand

    if not isinstance(command, SimpleCommand) or not command.words:
        return False
    words = [w.literal() for w in command.words]
    name = words[0]
    if name is None or name not in _COMPARERS:
        return False
    parsed = parse_options(name, words[1:])  # a word with an expansion is an operand
    if parsed is None or parsed.refused or any(o in ("-n", "--bytes") for o, _ in parsed.options):
        return False
    operands = [words[1 + i] for i in parsed.operands]
    from_input = sum(w in ("-", "/dev/stdin") for w in operands)
    if name == "cmp" and len(operands) == 1:
        return from_input == 0
    return len(operands) == 2 and from_input == 1


def judged_programs(cmd: str) -> frozenset[str]:
    """The workdir programs a check runs only for their output, which a comparison judges
    (`python3 render.py | diff - golden`, `python3 -m textkit < in | cmp - out`): each a
    stage before a last stage that compares its whole input with a file. Such a program is
    the code under test — its output is what the check judges — not the check's own
    program, unless it is also run for its status elsewhere in the check or its path says
    it is a checker (`tools/check_cases.py`, `tests/render.py`: a word of a checker's or
    the tests' helper's name in a directory or its stem). Empty when the line does not
    parse or a program cannot be told."""
    return frozenset(judged_programs_given(cmd))


@functools.lru_cache(maxsize=1024)
def judged_programs_given(cmd: str) -> dict[str, frozenset[str]]:
    """`judged_programs`, each with the files its stages are given: the literal words after
    the program's own that name a path, and what `<` feeds them. A program given the file
    the task writes is a tool over the work (`python3 tools/canon.py out.txt | diff - key`,
    `expected.judged_code`), not the work. Do not change the mapping: it is cached."""
    from groundskeeper.sandbox.registry import COMMANDS
    from groundskeeper.sandbox.syntax import ShellSyntaxError, parse, simple_commands
    from groundskeeper.sandbox.tree import Script, SimpleCommand, _compound_scripts

    try:
        script = parse(cmd)
    except ShellSyntaxError:
        return {}
    stages: set[int] = set()  # the ids of the stages whose output a comparison judges

    def walk(body: Script) -> None:
        for and_or in body.items:
            for pipeline in (and_or.first, *(p for _, p in and_or.rest)):
                commands = pipeline.commands
                if len(commands) > 1 and compares_its_input(commands[-1]):
                    stages.update(id(c) for c in commands[:-1] if isinstance(c, SimpleCommand))
                for command in commands:
                    if not isinstance(command, SimpleCommand):
                        for inner in _compound_scripts(command):
                            walk(inner)

    walk(script)
    judged: dict[str, set[str]] = {}
    other: set[str] = set()  # run for its status, or in `$(…)`: the check's own
    for command in simple_commands(script):
        words = [
            _UNREAD if w.literal() is None or w.has_glob() else str(w.literal())
            for w in command.words
        ]
        found = _stage_program(words, command, COMMANDS) if words else None
        if not isinstance(found, tuple):
            continue
        paths = _candidates(*found) or ()
        if id(command) not in stages:
            other.update(paths)
            continue
        given = _given(words, command, found[1])
        for path in paths:
            judged.setdefault(path, set()).update(given)
    return {
        p: frozenset(files)
        for p, files in judged.items()
        if p not in other and not _checker_path(p)
    }


def _given(words: list[str], command: object, named: str) -> set[str]:
    """The files a stage is given: each literal word after its program's name that names a
    path (an option aside), and its `<` inputs."""
    from groundskeeper.sandbox.tree import SimpleCommand

    given: set[str] = set()
    if named in words:
        given.update(
            p
            for w in words[words.index(named) + 1 :]
            if not w.startswith("-") and (p := normal_path(w)) is not None
        )
    if isinstance(command, SimpleCommand):
        for redirect in command.redirects:
            text = redirect.target.literal() if redirect.target is not None else None
            if redirect.op == "<" and text is not None and (p := normal_path(text)) is not None:
                given.add(p)
    return given


def _checker_path(path: str) -> bool:
    """Whether a word of a checker's or the tests' helper's name is in the path's stem or a
    directory of it (`tools/check_cases.py`, `tests/render.py`)."""
    parts = path.casefold().split("/")
    if parts[-1].startswith("__"):  # `pkg/__main__.py`: the package names it
        parts = parts[:-1]
    return any(w in _CHECKER_WORDS for part in parts for w in _words(part.split(".", 1)[0]))


def _short(text: str) -> str:
    return text if len(text) <= 120 else text[:120] + "…"
