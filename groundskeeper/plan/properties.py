"""Reading a task's acceptance properties: `:evidence:` fields, `:judge:` and `:judge-files:`,
`:gate:` and `:gate-files:`, `:protect:` (inherited, with `#+PROTECT:` and the schemas of the
task's contracts), `:hide:` (inherited, with `#+HIDE:`), `:writable:` (inherited),
`:max-attempts:` and `:dock:`, and how a plan's patterns match a path or a
command line. It owns what these properties say, not what is done with them: `plan.spec`
compiles them once per task, lint judges them, the acceptance stages act on them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from groundskeeper import path_patterns
from groundskeeper.fastclass import fastclass
from groundskeeper.plan.contract_syntax import Contract, protected_by, task_contracts
from groundskeeper.plan.keywords import file_keywords
from groundskeeper.plan.org import MAX_CHECK_TIMEOUT, Heading, Plan, check_timeout

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "EVIDENCE_TYPES",
    "GATE_KINDS",
    "OUTPUT_OF",
    "EvidenceField",
    "command_matches",
    "covers",
    "gate_files",
    "inherited_patterns",
    "is_gated",
    "judge_files",
    "max_attempts",
    "max_attempts_problem",
    "noop_option",
    "parse_evidence",
    "patterns_by_task",
    "task_evidence",
]

EVIDENCE_TYPES = ("bool", "int", "str", "list", "object", "output-of")
OUTPUT_OF = "output-of"
GATE_KINDS = ("approval",)
DEFAULT_MAX_ATTEMPTS = 2


# -- how patterns match ---------------------------------------------------------------------------


def command_matches(pattern: str, command: str) -> bool:
    """Glob match of a whole command text (`*` matches any characters, spaces and `/` too),
    unless the command carries an option that makes it do nothing the pattern does not
    spell itself (`noop_option`: `python3 -m pytest --co tests` runs no test)."""
    return fnmatch.fnmatchcase(command, pattern) and noop_option(pattern, command) is None


#: Options that make a program print something and do none of its work: help, a version,
#: pytest's collection and plans without a test run, a dry run.
_NOOP_OPTIONS = frozenset(
    {"--help", "--help-all", "--usage", "--version", "--co", "--collect-only", "--setup-plan",
     "--setup-only", "--fixtures", "--fixtures-per-test", "--markers", "--dry-run",
     "--list-tests"}
)  # fmt: skip
#: Short spellings of help and version, for Python and pytest only: elsewhere `-h` and `-V`
#: mean other things (grep's `-h` leaves out file names).
_NOOP_SHORT = frozenset({"-h", "-V"})
_PYTHON_PROGRAMS = frozenset({"python3", "python", "pytest", "py.test"})


#: What pytest runs tests under, for a pytest command (an allow-list, adversary-21 F2: a list
#: of do-nothing options missed `--collectonly`, `-VV` and every abbreviation pytest takes):
#: flags, options that take a value (`--tb short`, `--tb=short`, `-k EXPR`), and the short
#: letters that may be joined (`-qx`, `-ra`, `-kadd`). Any other option, unless the pattern
#: spells it, may make the command do none of its work, or run it with another
#: configuration (`-c`, `-o addopts=…`, `-p PLUGIN`; `-p no:NAME` only disables one).
_PYTEST_FLAGS = frozenset(
    {"--quiet", "--verbose", "--exitfirst", "--showlocals", "--no-showlocals", "--no-header",
     "--no-summary", "--strict-markers", "--strict-config", "--strict", "--runxfail",
     "--disable-warnings", "--disable-pytest-warnings", "--continue-on-collection-errors",
     "--doctest-modules", "--doctest-continue-on-failure", "--setup-show", "--full-trace",
     "--capture=no", "--new-first"}
)  # fmt: skip
_PYTEST_VALUED = frozenset(
    {"--tb", "--maxfail", "--capture", "--durations", "--durations-min", "--import-mode",
     "--ignore", "--ignore-glob", "--deselect", "--doctest-glob", "--doctest-report",
     "--basetemp", "--junitxml", "--junit-xml", "--junit-prefix", "--log-level",
     "--log-cli-level", "--log-format", "--log-date-format", "--color", "--code-highlight",
     "--verbosity", "--pythonwarnings", "--keyword", "--markers-expr"}
)  # fmt: skip
_PYTEST_SHORT_FLAGS = frozenset("qvxsl")
_PYTEST_SHORT_VALUED = frozenset("kmrW")


def noop_option(pattern: str, command: str) -> str | None:
    """The option among `command`'s words that may make it do none of its work and that
    `pattern` does not spell, or None: for a pytest command, any option pytest does not run
    tests under (`_pytest_run_option`); for another, a do-nothing one (`_NOOP_OPTIONS`:
    adversary-19 F11, `ran "python3 -m pytest *tests"` was met by `python3 -m pytest --co -q
    tests`). A word that cannot be split counts as itself."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    spelt = set(pattern.split())
    arguments = _pytest_arguments(words)
    if arguments is not None:
        return _pytest_run_option(arguments, spelt)
    python = bool(words) and words[0] in _PYTHON_PROGRAMS
    return next(
        (
            w
            for w in words
            if (w in _NOOP_OPTIONS or (python and w in _NOOP_SHORT)) and w not in spelt
        ),
        None,
    )


def _pytest_arguments(words: list[str]) -> list[str] | None:
    """pytest's own arguments when `words` run pytest (`pytest …`, `python3 [OPTION…] -m
    pytest …`), else None."""
    if not words:
        return None
    if words[0] in ("pytest", "py.test"):
        return words[1:]
    if words[0] not in ("python3", "python"):
        return None
    for at, word in enumerate(words[1:], start=1):
        if word == "-mpytest" or (word == "-m" and words[at + 1 : at + 2] == ["pytest"]):
            return words[at + (1 if word == "-mpytest" else 2) :]
        if word in ("-c", "-m") or not word.startswith("-"):
            return None  # another module, a program, or a script
    return None


def _pytest_run_option(arguments: list[str], spelt: set[str]) -> str | None:
    """The first option among pytest's `arguments` it may not run tests under, unless spelt."""
    words = iter(arguments)
    for word in words:
        if word == "--":
            return None
        if not word.startswith("-") or word == "-" or word in spelt:
            continue
        name, equals, _ = word.partition("=")
        if word.startswith("--"):
            if word in _PYTEST_FLAGS or (name in _PYTEST_VALUED and equals):
                continue
            if name in _PYTEST_VALUED and next(words, None) is not None:
                continue
            return word
        letters = word[1:]
        if word == "-p" or word.startswith("-p"):
            value = letters[1:] or next(words, "")
            if value.startswith("no:"):
                continue
            return word
        for at, letter in enumerate(letters):
            if letter in _PYTEST_SHORT_FLAGS:
                continue
            if letter in _PYTEST_SHORT_VALUED:
                if at == len(letters) - 1 and next(words, None) is None:
                    return word
                break
            return word
    return None


def covers(patterns: Iterable[str], relative: str) -> bool:
    """Whether `relative` (a file's path inside the workdir) is covered by the patterns, read
    as every path property reads them (`groundskeeper.path_patterns`, gitignore's rules)."""
    return path_patterns.covers(patterns, relative)


# -- evidence -------------------------------------------------------------------------------------


@fastclass(frozen=True, slots=True)
class EvidenceField:
    name: str
    type: str
    pattern: str | None = None  # for output-of: the glob the quoting command must match

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.type}" + (f":{self.pattern}" if self.pattern else "")


def parse_evidence(text: str) -> tuple[list[EvidenceField], list[str]]:
    """The fields of an `:evidence:` value, and what is wrong with it (lint's T017)."""
    import shlex

    fields: list[EvidenceField] = []
    problems: list[str] = []
    try:
        words = shlex.split(text, posix=True)
    except ValueError as exc:
        return [], [f"`:evidence: {text.strip()}` cannot be split: {exc}"]
    if not words:
        problems.append("empty :evidence:; expected `NAME:TYPE …`")
    seen: set[str] = set()
    for word in words:
        name, sep, rest = word.partition(":")
        kind, _, pattern = rest.partition(":")
        if not sep or not name or not name.replace("_", "a").replace("-", "a").isalnum():
            problems.append(f"`{word}`: expected NAME:TYPE (a name of letters, digits, _ and -)")
            continue
        if kind not in EVIDENCE_TYPES:
            problems.append(
                f"`{word}`: unknown evidence type `{kind}`;"
                f" the types are {', '.join(EVIDENCE_TYPES)}"
            )
            continue
        if kind == OUTPUT_OF and not pattern:
            problems.append(
                f"`{word}`: output-of needs the command it quotes, as a glob:"
                f" `{name}:output-of:'yamllint *'`, so that the quote cannot be self-made"
            )
            continue
        if kind != OUTPUT_OF and pattern:
            problems.append(f"`{word}`: only output-of takes a pattern")
            continue
        if name in seen:
            problems.append(f"`{name}` is declared twice")
            continue
        seen.add(name)
        fields.append(EvidenceField(name, kind, pattern or None))
    return fields, problems


def task_evidence(plan: Plan, heading: Heading) -> tuple[list[EvidenceField], list[str]]:
    """A task's declared evidence, from its `:evidence:` line and every `:evidence+:` line."""
    fields: list[EvidenceField] = []
    problems: list[str] = []
    for _line, text in plan.property_parts(heading, "evidence"):
        found, wrong = parse_evidence(text)
        fields.extend(found)
        problems.extend(wrong)
    return fields, problems


# -- the judge and the gate -----------------------------------------------------------------------


def path_words(raw: str) -> tuple[str, ...]:
    """A property's paths or patterns, split as a shell splits words: `"golden output.txt"`
    and `golden\\ output.txt` name one file with a space. Unbalanced quotes: split at
    whitespace (lint's F001 names the quote left over)."""
    import shlex

    try:
        return tuple(shlex.split(raw, posix=True))
    except ValueError:
        return tuple(raw.split())


def judge_files(heading: Heading) -> tuple[list[str], list[str]]:
    """The `:judge-files:` path patterns (separated by spaces) and what is wrong with any of
    them (`path_patterns.pattern_problem`: each names files inside the workdir)."""
    raw = heading.get_property("judge-files")
    if raw is None:
        return [], []
    paths: list[str] = []
    wrong: list[str] = []
    for word in path_words(raw):
        problem = path_patterns.pattern_problem(word)
        if problem is not None:
            wrong.append(problem)
        elif word not in paths:
            paths.append(word)
    if not paths and not wrong:
        wrong.append("it names no file")
    return paths, wrong


def is_gated(heading: Heading) -> bool:
    raw = heading.get_property("gate")
    return raw is not None and raw.strip() in GATE_KINDS


def gate_files(heading: Heading) -> tuple[str, ...] | None:
    """The `:gate-files:` property's paths (whitespace-separated), or None when unset."""
    raw = heading.get_property("gate-files")
    if raw is None:
        return None
    return path_words(raw)


# -- protection, attempts ------------------------------------------------------------------------


def patterns_by_task(plan: Plan) -> dict[Heading, tuple[str, ...]]:
    """Every task's protected patterns: the file's, its ancestors' and its own `:protect:`,
    and the schemas of its own and its ancestors' contracts — a parent's contract judges its
    subtree's work, so no worker of the subtree may change what it judges with (adversary-6
    F22: a child emptied its parent's schema)."""
    found = inherited_patterns(plan, "protect", "PROTECT")

    def visit(headings: Iterable[Heading], inherited: tuple[str, ...]) -> None:
        for heading in headings:
            mine = inherited
            if heading.is_task and heading.get_property("contract") is not None:
                # the schemas its contracts judge with are protected like the checks' inputs
                contracts = task_contracts(plan, heading)[0]
                mine = inherited + protected_by(contracts) + _referenced_schemas(plan, contracts)
            if heading in found:
                found[heading] = tuple(dict.fromkeys(found[heading] + mine))
            visit(heading.children, mine)

    visit(plan.roots, ())
    return found


def _referenced_schemas(plan: Plan, contracts: Iterable[Contract]) -> tuple[str, ...]:
    """The files a `json-schema` contract's schema reaches by relative `$ref`
    (`schema_refs.schema_files`, as the contract reads them): protected like the schema, so
    a worker cannot empty the part that judges it. What cannot be read adds nothing (lint's
    T016 and the contract's C006 refuse it)."""
    import json

    from groundskeeper.plan.schema_refs import SchemaRefError, schema_files

    if plan.path is None:
        return ()
    base = plan.path.parent

    def read(path: str) -> str | None:
        try:
            return (base / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    found: list[str] = []
    for contract in contracts:
        if contract.kind != "json-schema":
            continue
        schema = contract.args[0]
        try:
            contents = json.loads(read(schema) or "null")
            found.extend(schema_files(schema, contents, read, lambda _p: False))
        except (ValueError, SchemaRefError):
            continue
    return tuple(dict.fromkeys(found))


def inherited_patterns(
    plan: Plan, name: str, keyword: str | None = None
) -> dict[Heading, tuple[str, ...]]:
    """Every task's path patterns of property `name` (`protect`, `hide`, `writable`): the
    file's `#+KEYWORD:` lines, its ancestors' and its own property, in that order."""
    found: dict[Heading, tuple[str, ...]] = {}
    base: tuple[str, ...] = ()
    if keyword is not None:
        base = tuple(p for value in file_keywords(plan.text, keyword) for p in path_words(value))

    def visit(headings: Iterable[Heading], inherited: tuple[str, ...]) -> None:
        for heading in headings:
            own = heading.get_property(name)
            mine = inherited + (path_words(own) if own else ())
            if heading.is_task:
                found[heading] = mine
            visit(heading.children, mine)

    visit(plan.roots, base)
    return found


def max_attempts_problem(heading: Heading) -> str | None:
    """What is wrong with `:max-attempts:` (None: unset or a whole number ≥ 1), or else with
    `:timeout:` (None: unset or seconds > 0 and ≤ `MAX_CHECK_TIMEOUT`)."""
    raw = heading.get_property("max-attempts")
    if raw is not None and not (raw.strip().isdigit() and int(raw) >= 1):
        return f":max-attempts: must be a whole number ≥ 1, not `{raw}`"
    raw = heading.get_property("timeout")
    if raw is not None and check_timeout(raw) is None:
        return (
            f":timeout: must be the seconds the check may take, a number > 0 and"
            f" ≤ {MAX_CHECK_TIMEOUT:g}, not `{raw}`"
        )
    return None


def max_attempts(heading: Heading) -> int:
    raw = heading.get_property("max-attempts")
    return int(raw) if raw is not None and raw.strip().isdigit() else DEFAULT_MAX_ATTEMPTS
