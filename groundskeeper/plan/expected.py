"""Expected-output files: what a task's check compares the work against (`plan.compared` reads
the check as it will run: `cd`, variables, options), unless the task asks its worker to
change the file — its text makes the file the object of a changing verb ("regenerate
tests/expected.txt"; "make out.txt match tests/expected.txt" asks nothing of the golden) —
or `:writable:` covers it. A run protects those that exist before it starts and says so once
(issue 23); lint's T014 asks that they be hidden. It reads the compiled spec, and the disk
only in `existing_files`.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from groundskeeper.path_patterns import covers, naming, normal_path
from groundskeeper.plan.asked_sentences import text_asks
from groundskeeper.plan.asking import (
    ASKS,
    FORBIDS,
    SILENT,
    UNSURE,
    seems_about,
    sentences,
    text_reading,
)
from groundskeeper.plan.lint_checks import CHECK_LANGUAGE
from groundskeeper.plan.spec import TaskSpec
from groundskeeper.plan.test_paths import runs_pytest_check, runs_unittest, test_paths
from groundskeeper.pytest_files import PYTEST_CONFIGURATION, is_test_module

if TYPE_CHECKING:
    from groundskeeper.sandbox.tree import Script

__all__ = [
    "ASKS",
    "FORBIDS",
    "PYTEST_CONFIGURATION",
    "SILENT",
    "UNSURE",
    "asks_to_change",
    "asks_to_remove_matching",
    "check_test_file",
    "compared_by",
    "configuration_kept",
    "existing_configuration",
    "existing_files",
    "expected_files",
    "expected_inputs",
    "freed",
    "judged_code",
    "programs_run_by",
    "python_in_process",
    "reading",
    "runs_pytest_check",
    "runs_pytest_contract",
    "seems_about",
    "stem_names",
    "task_programs",
    "task_text",
    "text_reading",
    "unsure_message",
]


@functools.lru_cache(maxsize=4096)
def compared_by(language: str, text: str) -> tuple[str, ...]:
    """The files (or glob patterns) a check's script compares against, as the check will
    name them when it runs, in order, each once; none when the check does not parse (lint
    says so) or is not a shell check."""
    from groundskeeper.plan.compared import compared_files

    return _named(language, text, compared_files)


@functools.lru_cache(maxsize=1024)
def checksum_lists_of(language: str, text: str) -> tuple[str, ...]:
    """The checksum lists a shell check verifies (`sha256sum -c LIST`: `plan.compared`),
    normalised as `compared_by` names them."""
    from groundskeeper.plan.compared import checksum_lists

    return _named(language, text, checksum_lists)


def _named(language: str, text: str, reading: Callable[[Script], Iterable[str]]) -> tuple[str, ...]:
    """The paths `reading` finds in a shell check's script, normalised, in order, each
    once; none when the check does not parse or is not a shell check."""
    if language != CHECK_LANGUAGE:
        return ()
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        script = parse(text)
    except ShellSyntaxError:
        return ()
    found = (normal_path(name) for name in reading(script))
    return tuple(dict.fromkeys(name for name in found if name is not None))


@functools.lru_cache(maxsize=4096)
def programs_run_by(language: str, text: str) -> tuple[str, ...]:
    """The workdir files a check runs as programs (`python3 check.py`,
    a `-m` module's candidates: `plan.programs`' reading): a checker the worker could
    rewrite is a reference like an expected file (less the code under test a task's check
    runs for its output: `task_programs`). None when the check does not parse or
    names a program through an expansion (lint says so)."""
    if language != CHECK_LANGUAGE:
        return ()
    from groundskeeper.plan.programs import command_programs

    found = command_programs(text)
    if isinstance(found, str):
        return ()
    return tuple(dict.fromkeys(p for program in found for p in program.paths))


def judged_code(task: TaskSpec) -> frozenset[str]:
    """The programs the task's check runs only for their output, which a comparison judges
    (`python3 render.py | diff - golden`: `plan.programs.judged_programs`), when they are
    the code under test: the task neither asks to change nor frees (`:writable:`) a file
    its check compares against. When it does ("Regenerate tests/expected.txt with python3
    gen.py"), the file compared with is the work and the program its reference: a worker
    that rewrote gen.py to print the stale golden would pass. A program given a file the
    task asks to change or frees (`python3 tools/canon.py out.txt | diff - key` for "Write
    out.txt …") is a tool over the work, the check's own (adversary-21 F13: rewritten, it
    printed the hidden key)."""
    check = task.check
    if check is None or check.language != CHECK_LANGUAGE:
        return frozenset()
    from groundskeeper.plan.programs import judged_programs_given

    judged = judged_programs_given(check.text)
    if not judged:
        return frozenset()
    for name in compared_by(check.language, check.text):
        if covers(task.writable, name) or asks_to_change(task, name):
            return frozenset()
    return frozenset(
        program
        for program, given in judged.items()
        if not any(covers(task.writable, f) or asks_to_change(task, f) for f in given)
    )


def task_programs(task: TaskSpec) -> tuple[str, ...]:
    """The workdir programs the task's check runs that are the check's own (`programs_run_by`
    less `judged_code`): a checker the worker could rewrite is a reference."""
    check = task.check
    if check is None:
        return ()
    judged = judged_code(task)
    return tuple(p for p in programs_run_by(check.language, check.text) if p not in judged)


#: A sentence asking for tests: "Add a test for mul", "write tests covering …", "and test
#: it", "with a test for it", "cover it with tests", "(tested)" (adversary-20 F1).
_ASKS_TESTS = re.compile(
    r"\b(?:add|adds|adding|write|writes|writing|create|extend)\s+"
    r"(?:(?:a|an|new|more|some|unit|regression|missing|the)\s+)*tests?\b"
    r"|\b(?:with|plus|and)\s+(?:(?:a|an|new|more|some|unit|regression|its|their|own)\s+)*"
    r"tests?\s+(?:for|of|covering|that)\b"
    r"|\b(?:and|then)\s+test\s+(?:it|them|this|that)\b|^\s*test\s+(?:it|them)\b"
    r"|\bcover(?:s|ed|ing)?\s+(?:(?:the|this|that|your|its)\s+)?(?:it|them|this|that|[\w.()]+)"
    r"\s+with\s+(?:(?:a|an|unit|new|regression)\s+)*tests?\b"
    r"|\((?:tested|with\s+tests?)\)",
    re.IGNORECASE,
)


def asks_for_tests(task: TaskSpec) -> bool:
    """Whether the task's title or text (its check aside) asks its worker for tests, in a
    sentence that does not negate it: what frees a new test module (`test_*.py`) on its
    check's side, and under its own `pytest` contract's test paths."""
    return text_asks(task, _ASKS_TESTS)


def asks_to_change(
    task: TaskSpec, path: str, *, anywhere: bool = False, sole_stem: bool = False
) -> bool:
    """Whether the task's title or text (its check aside) plainly asks its worker to change
    `path`: some sentence makes it the object of a changing verb, or the place a change goes
    ("add … to X"), and no sentence naming it negates or keeps it (`reading`). With
    `anywhere`, a file of that name in any directory (`tests/conftest.py` for `conftest.py`).
    `sole_stem`: no other file in view shares the file's stem, so the stem alone names it
    ("update the report" for `out/report.txt`)."""
    return reading(task, path, anywhere=anywhere, sole_stem=sole_stem) == ASKS


def stem_names(checked: TaskSpec, asker: TaskSpec, path: str, seen: Iterable[str]) -> bool:
    """Whether the stem alone ("the report" for `out/report.txt`) may name `path`, a file the
    check of `checked` read, in the text of `asker` (adversary-14 F6): no other file in view
    (`seen`: what the check read) shares its stem, the check neither compares against it
    (`diff`, `cmp`, …) nor runs it, and `asker`'s text asks by full name to change no other
    file in view — then that file is the work, and a common word that is a read file's stem
    ("Write the solution into out3.txt") is no name of the key. A file the check compares
    against or reads as its key is freed only by its full name or `:writable:`."""
    stem = _stem(path)
    others = [p for p in seen if p != path]
    if not stem or any(_stem(p) == stem for p in others):
        return False
    check = checked.check
    if check is not None:
        keys = compared_by(check.language, check.text) + task_programs(checked)
        if any(covers((k,), path) for k in keys):
            return False
    return not any(not p.endswith(".py") and asks_to_change(asker, p) for p in others)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].casefold()


def reading(task: TaskSpec, path: str, *, anywhere: bool = False, sole_stem: bool = False) -> str:
    """How the task's title and text (its check aside) read `path`: ASKS, FORBIDS, UNSURE or
    SILENT — one reading for lint, the run and the agent hook (fail-closed: a sentence naming
    the file that negates anything, or keeps it as it is, is never read as asking). A test
    file of the task's own check (`check_test_file`) is named by "the test(s)" too ("fix the
    test so it expects 5"; "make the tests pass" asks nothing of it)."""
    return text_reading(
        task_text(task),
        path,
        anywhere=anywhere,
        sole_stem=sole_stem,
        test_file=not anywhere and check_test_file(task, path),
    )


def check_test_file(task: TaskSpec, path: str) -> bool:
    """Whether `path` is one of the task's check's own test files, which "the tests" names in
    its text: a `test_*.py` or `*_test.py` that a pytest check (`python3 -m pytest PATHS`)
    or a unittest check collects — under one of its test paths, anywhere when it names none —
    or that the task's `pytest` contract's test paths cover (its visible tests)."""
    name = path.rsplit("/", 1)[-1].casefold()
    if not is_test_module(name):
        return False
    from groundskeeper.plan.contract_syntax import protected_by

    suite = tuple(p for c in task.contracts if c.kind == "pytest" for p in protected_by((c,)))
    if suite and covers(suite, path):
        return True

    if not (runs_pytest_check(task) or runs_unittest(task)):
        return False
    paths = [p for p in test_paths(task) if p != "."]
    return not paths or covers(tuple(paths), path)


def task_text(task: TaskSpec) -> str:
    """The task's title and text, its check aside: the title a sentence of its own. A
    `:check` block is left out whole, as written (indented or not: the check's text is
    the block's body with its indentation removed, so it is never found in the text
    verbatim), or its commands would read as requests (`sort -u words.txt`: "sort")."""
    heading = task.heading
    kept: list[str] = []
    inside = False
    for line in heading.body.split("\n"):
        stripped = line.strip(" \t")
        if inside:
            inside = stripped.lower() != "#+end_src"
            continue
        words = stripped.split()
        if words and words[0].lower() == "#+begin_src" and ":check" in words[1:]:
            inside = True
            continue
        kept.append(line)
    return "\n\n".join([heading.title, "\n".join(kept)])


def unsure_message(task_id: str, path: str) -> str:
    """What lint (T028) and the run (F002) say of a task whose text is unsure whether it asks
    to change `path`: it stays protected, and how to let the worker change it."""
    return (
        f"the text of task {task_id} asks to change `{path}` but also negates or keeps"
        " something in the same sentence, so it is not read as asking: the file stays"
        f" protected; if the worker should change it, add `:writable: {naming(path)}` to that task"
    )


def freed(spec_tasks: tuple[TaskSpec, ...] | list[TaskSpec], path: str) -> bool:
    """Whether some task of the plan may change `path`: `:writable:` covers it, or its text
    asks for the change (a sibling whose job is to regenerate the golden)."""
    return any(covers(t.writable, path) or asks_to_change(t, path) for t in spec_tasks)


def expected_files(task: TaskSpec) -> tuple[str, ...]:
    """The task's expected-output files (a glob stays a pattern): compared against by its
    check, or run by it as a program (`programs_run_by`), neither asked to be changed by its
    text nor freed by `:writable:`."""
    check = task.check
    if check is None:
        return ()
    named = compared_by(check.language, check.text) + task_programs(task)
    return tuple(
        path
        for path in dict.fromkeys(named)
        if not covers(task.writable, path) and not asks_to_change(task, path)
    )


def existing_files(base: Path, name: str) -> list[str]:
    """The regular files under `base` that `name` (a path, or a glob pattern) names now,
    relative and `/`-separated; never inside a control directory."""
    if not any(c in name for c in "*?["):
        return [name] if (base / name).is_file() else []
    try:
        found = sorted(p for p in base.glob(name) if p.is_file())
    except (ValueError, OSError):
        return []
    relative = (p.relative_to(base).as_posix() for p in found)
    return [r for r in relative if ".groundskeeper" not in r.casefold().split("/")]


@functools.lru_cache(maxsize=4096)
def _python_in_process(language: str, text: str) -> str | None:
    if language != CHECK_LANGUAGE:
        return None
    from groundskeeper.plan.compared import runs_python_in_process
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        return runs_python_in_process(parse(text))
    except ShellSyntaxError:
        return None


def python_in_process(task: TaskSpec) -> str | None:
    """The command of the task's check that imports the code under test into its own
    Python interpreter, other than pytest (`compared.runs_python_in_process`), or None."""
    if task.check is None:
        return None
    return _python_in_process(task.check.language, task.check.text)


def existing_configuration(workdir: Path, limit: int = 20_000) -> list[str]:
    """The files in `workdir` that configure pytest (or the Python it runs in): a
    `conftest.py`, `sitecustomize.py`, `usercustomize.py` or `.pth` anywhere, a root file
    of `AT_ROOT` with its pytest section; `.groundskeeper` skipped, `limit` entries looked
    at (past it, what was found so far)."""
    from groundskeeper.pytest_files import ANYWHERE, AT_ROOT, PTH

    root = Path(os.path.realpath(workdir))
    found: list[str] = []
    seen = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d.casefold() != ".groundskeeper")
        seen += len(dirs) + len(files)
        if seen > limit:
            break
        here = Path(top)
        for name in sorted(files):
            if name in ANYWHERE or fnmatch.fnmatchcase(name, PTH):
                found.append((here / name).relative_to(root).as_posix())
            elif here == root and name in AT_ROOT:
                section = AT_ROOT[name]
                try:
                    text = (here / name).read_text(errors="replace") if section else ""
                except OSError:
                    text = section  # unreadable: held rather than guessed
                if section in text:
                    found.append(name)
    return found


def runs_pytest_contract(task: TaskSpec) -> bool:
    """Whether the task has a `pytest` contract (which runs the suite under the
    configuration the run keeps from workers, and refuses any other: C021)."""
    return any(c.kind == "pytest" for c in task.contracts)


_PYTEST_WORD = re.compile(r"(?<![\w.-])py\.?test(?![\w-])")


def counts_pytest_runs(task: TaskSpec) -> bool:
    """Whether the task's DONE counts a pytest run the worker makes: a `ran` contract or an
    `:evidence:` `output-of:` whose command pattern names pytest (adversary-21 F2: a
    `pytest.ini` the worker wrote, `addopts = --collect-only`, made `python3 -m pytest
    tests` run nothing and exit 0)."""
    patterns = [c.args[0] for c in task.contracts if c.kind == "ran" and c.args]
    patterns += [f.pattern for f in task.evidence if f.pattern]
    return any(_PYTEST_WORD.search(p) for p in patterns)


def configuration_kept(
    tasks: tuple[TaskSpec, ...] | list[TaskSpec], workdir: Path | None = None
) -> tuple[str, ...]:
    """The pytest configuration patterns no worker of the run may write, when some task's
    check runs pytest itself, or its DONE counts a pytest run (`counts_pytest_runs`): each
    that no task frees (`:writable:` covering the name, or a task's text asking to change a
    file of that name). Else, when a task has a `pytest` contract (and `workdir` is given):
    the configuration files there now (`/path`), which the contract would refuse unprotected
    (C021) — the project's own, held for it."""
    if not any(runs_pytest_check(t) or counts_pytest_runs(t) for t in tasks):
        if workdir is None or not any(runs_pytest_contract(t) for t in tasks):
            return ()
        return tuple(f"/{p}" for p in existing_configuration(workdir))
    return tuple(
        pattern
        for pattern in PYTEST_CONFIGURATION
        if not any(
            covers(t.writable, pattern) or asks_to_change(t, pattern, anywhere=True) for t in tasks
        )
    )


def expected_inputs(
    tasks: tuple[TaskSpec, ...] | list[TaskSpec], base: Path, known: frozenset[str] | None = None
) -> dict[str, list[str]]:
    """Each expected file that exists (under `base` now; `known`: among these names, as a
    seal recorded them) and is protected without a pattern naming it (not covered by the
    comparing task's own `:protect:` or `:hide:`) → the tasks comparing against it. A run
    protects these (`supervisor.run_paths`), and an agent's session the same ones."""
    found: dict[str, list[str]] = {}
    for task in tasks:
        for pattern in expected_files(task):
            if known is None:
                names = existing_files(base, pattern)
            elif any(c in pattern for c in "*?["):
                names = sorted(n for n in known if fnmatch.fnmatchcase(n, pattern))
            else:
                names = [pattern] if pattern in known else []
            for name in names:
                if covers(task.protect, name) or covers(task.hide, name):
                    continue
                comparing = found.setdefault(name, [])
                if task.task_id not in comparing:
                    comparing.append(task.task_id)
    return found


# A removing verb, in command position at a sentence's or clause's start ("Delete …",
# "Clean up out/: remove …").
_REMOVING = re.compile(
    r"(?:^|[:;,]\s*|\band\s+)(?:please\s+)?(?:delete|remove|drop|purge|erase|prune|clean\s+up"
    r"|get\s+rid\s+of)\b",
    re.I,
)
_NOT_REMOVING = re.compile(r"\b(?:not|never|don't|do\s+not|without|n't)\b", re.I)
_GLOB = re.compile(r"(?<![\w/])((?:[\w.-]+/)*[\w.-]*[*?][\w.*?-]*)")
_KIND = re.compile(r"\b(?:every|all|each|any|the)\s+(\.\w+)\s+files?\b", re.I)
_FOLDER = re.compile(r"\b(?:in|from|under|inside)\s+([\w.-]+(?:/[\w.-]+)*/)", re.I)
_LEADING_FOLDER = re.compile(r"^\W*(?:\w+\s+){0,3}?([\w.-]+(?:/[\w.-]+)*/)\s*:")


def asks_to_remove_matching(task: TaskSpec, path: str) -> bool:
    """Whether a sentence of the task's text asks, plainly (a removing verb, no negation
    before it), to remove files by a pattern (`*.tmp`, `out/*.log`) or by their kind
    ("every .tmp file"), and `path` is one of them: its name matches, in the folder the
    pattern or the sentence names ("in out/", "Clean up out/: …"), anywhere when it names
    none."""
    name = posixpath.basename(path)
    for sentence in sentences(task_text(task)):
        verb = _REMOVING.search(sentence)
        if verb is None or _NOT_REMOVING.search(sentence[: verb.end()]):
            continue
        rest = sentence[verb.start() :]
        patterns = [m.group(1) for m in _GLOB.finditer(rest)]
        patterns += ["*" + m.group(1) for m in _KIND.finditer(rest)]
        folder = _FOLDER.search(rest) or _LEADING_FOLDER.search(sentence)
        for pattern in patterns:
            where, _, glob = pattern.rpartition("/")
            where = where or (folder.group(1).rstrip("/") if folder else "")
            if not fnmatch.fnmatchcase(name, glob):
                continue
            if not where or posixpath.dirname(path) == where.removeprefix("./"):
                return True
    return False
