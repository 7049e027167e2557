"""What a passing check READ is the check's, unless the task asks to change it: the one rule
the run (each attempt's check, roll-ups, the final sweep) and the agent hook apply at the
verdict, built on what the sandbox observed rather than on the check's spelling.

A check's run records every workdir file it opened for reading (`sandbox.read_set`, kept
even when the set is tainted), and a worker's attempt every path it changed, by any tool
(`sandbox.writes`; the hook, which has no journal, compares a snapshot). A file the passing
check read that existed before the work (at run start, or made by another task before the
checked task first started) and that a worker changed fails the verdict, named, unless:

- the changing task is entitled to it: its text asks to change it (`plan.expected.reading`:
  the path, or "the result file" / "the changelog" by its stem), or `:writable:` covers it;
- it is the code under test (`check_role` below): a Python module read by a check whose
  program is not that module's — the work, writable by anyone.

`check_role` tells the code under test from the check's own programs and data, from the
check's text and the file's name only (a read set cannot tell an import from an `open()`):

- a file a pytest check (`python3 -m pytest PATHS`) collects or keeps beside its tests is
  the checker's: everything under a directory PATH, a file PATH itself, and anywhere a
  `test_*.py`, `*_test.py` or `conftest.py`;
- a program the check runs from the workdir (`python3 check.py`, `sh t.sh`, a `-m` module's
  file) is the checker's, and so is every `.py` file in that program's directory and below
  (the modules it imports: sys.path[0] is its directory);
- any other `.py` file (and its `__pycache__` bytecode) is the code under test;
- anything else is data the check derives its answer from: the checker's.

It owns that rule; it does not run checks or record writes (the sandbox does), nor decide a
task's state (the runner does, with the reasons this returns).
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from groundskeeper.path_patterns import covers
from groundskeeper.plan.expected import asks_to_change, runs_pytest_check
from groundskeeper.plan.spec import TaskSpec

__all__ = [
    "CHECKER",
    "CODE",
    "DATA",
    "Writer",
    "check_role",
    "entitled",
    "pytest_paths",
    "read_inputs_changed",
    "session_inputs_changed",
]

#: What a file a check read is to that check.
CODE, CHECKER, DATA = "code", "checker", "data"

_TEST_NAMES = ("test_*.py", "*_test.py", "conftest.py")
#: pytest options whose value is the next word (a path after them is no test path).
_PYTEST_VALUED = frozenset(
    {"-k", "-m", "-p", "-c", "-o", "-W", "--rootdir", "--deselect", "--ignore",
     "--ignore-glob", "--confcutdir", "--basetemp", "--junitxml", "--junit-xml", "-r",
     "--maxfail", "--tb", "--durations", "--import-mode", "--override-ini", "--config-file",
     "--log-file", "--log-level", "--capture", "--pyargs", "-n", "--dist"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Writer:
    """Who changed a file: a task's worker (`task_id`), or, in an agent's session, the session
    itself (`task_id` None)."""

    task_id: str | None


def _is_code(path: str) -> bool:
    name = posixpath.basename(path)
    return name.endswith(".py") or (
        name.endswith(".pyc") and posixpath.basename(posixpath.dirname(path)) == "__pycache__"
    )


def _source_of(path: str) -> str:
    """A `__pycache__/m.cpython-312.pyc` as the `m.py` beside its directory; a `.py` as is."""
    if not path.endswith(".pyc"):
        return path
    cache = posixpath.dirname(path)
    module = posixpath.basename(path).split(".", 1)[0]
    return posixpath.join(posixpath.dirname(cache), module + ".py")


def pytest_paths(task: TaskSpec) -> tuple[str, ...]:
    """The test paths the task's check hands pytest (`python3 -m pytest -q tests a/t.py`),
    normalized, node ids cut at `::`; none when it names none (pytest's own discovery)."""
    check = task.check
    if check is None or not runs_pytest_check(task):
        return ()
    return _pytest_paths(check.text)


@functools.lru_cache(maxsize=1024)
def _pytest_paths(text: str) -> tuple[str, ...]:
    from groundskeeper.path_patterns import normal_path
    from groundskeeper.sandbox import ShellSyntaxError, parse
    from groundskeeper.sandbox.syntax import simple_commands

    try:
        script = parse(text)
    except ShellSyntaxError:
        return ()
    found: list[str] = []
    for command in simple_commands(script):
        words = [w.literal() for w in command.words]
        if not words or words[0] not in ("python3", "python"):
            continue
        try:
            at = words.index("pytest", 1)
        except ValueError:
            continue
        skip = False
        for word in words[at + 1 :]:
            if word is None or skip:
                skip = False
                continue
            if word.startswith("-"):
                skip = word in _PYTEST_VALUED
                continue
            path = normal_path(word.split("::", 1)[0])
            if path is not None:
                found.append(path)
    return tuple(dict.fromkeys(found))


def _programs(task: TaskSpec) -> tuple[tuple[str, str], ...]:
    """(how, path) of each workdir program the task's check runs (`plan.programs`)."""
    check = task.check
    return () if check is None else _programs_of(check.text)


@functools.lru_cache(maxsize=1024)
def _programs_of(text: str) -> tuple[tuple[str, str], ...]:
    from groundskeeper.plan.programs import command_programs

    found = command_programs(text)
    if isinstance(found, str):
        return ()
    return tuple((p.how, path) for p in found for path in p.paths)


def check_role(task: TaskSpec, path: str) -> str:
    """What `path` (relative, `/`-separated), read by the task's check, is to it: CODE (the
    code under test: the work), CHECKER (the check's own program, tests or their helpers) or
    DATA (what the check derives its verdict from: the checker's too). See the module."""
    code = _is_code(path)
    source = _source_of(path) if code else path
    name = posixpath.basename(source)
    if runs_pytest_check(task):
        if code and any(fnmatch.fnmatchcase(name, p) for p in _TEST_NAMES):
            return CHECKER
        for test_path in pytest_paths(task):
            if source == test_path or source.startswith(test_path.rstrip("/") + "/"):
                return CHECKER
    for how, program in _programs(task):
        if source == program:
            return CHECKER
        if how == "module" or not code or not program.endswith(".py"):
            continue  # a module's imports come from the workdir's top: the code under test
        directory = posixpath.dirname(program)
        if not directory or source.startswith(directory + "/"):
            return CHECKER
    return CODE if code else DATA


def entitled(
    changer: TaskSpec | None,
    path: str,
    *,
    checked: TaskSpec,
    tasks: Sequence[TaskSpec] = (),
    seen: Iterable[str] = (),
) -> bool:
    """Whether a change to `path` is the work, for the check of task `checked`: the file is the
    code under test there, or the changing task's text asks to change it, or its `:writable:`
    covers it. `changer` None (an agent's session, which works on every task): some task of
    `tasks` asks for it or frees it. `seen`: the other files the check read — when none
    shares the file's stem, the stem alone names it ("update the report")."""
    if check_role(checked, path) == CODE:
        return True
    sole = _sole_stem(path, seen)
    among = [changer] if changer is not None else list(tasks)
    return any(covers(t.writable, path) or asks_to_change(t, path, sole_stem=sole) for t in among)


def _stem(path: str) -> str:
    return posixpath.basename(path).split(".", 1)[0].casefold()


def _sole_stem(path: str, seen: Iterable[str]) -> bool:
    stem = _stem(path)
    return bool(stem) and not any(p != path and _stem(p) == stem for p in seen)


def read_inputs_changed(
    checked: TaskSpec,
    read: Iterable[str],
    writes: Mapping[str, Sequence[str]],
    existed: Collection[str] | Callable[[str], bool],
    specs: Mapping[str, TaskSpec],
) -> list[str]:
    """Why a pass of `checked`'s check must not make it DONE: for each file it `read` that
    `existed` before the work and that a worker changed without being entitled to
    (`entitled`) — `writes` maps a file to the ids of the tasks whose workers changed it, in
    order; an entitled change re-bases it (what an earlier intruder did is undone by a
    regeneration the plan asks for) — one named reason. Empty: nothing stands in the way.
    A writer missing from `specs` is never entitled."""
    was = existed if callable(existed) else existed.__contains__
    found: list[str] = []
    seen = sorted(set(read))
    for path in seen:
        changers = writes.get(path)
        if not changers or not was(path):
            continue
        intruder: str | None = None
        for task_id in changers:
            spec = specs.get(task_id)
            if spec is not None and entitled(spec, path, checked=checked, seen=seen):
                intruder = None
            elif intruder is None:
                intruder = task_id
        if intruder is not None:
            found.append(_reason(path, f"the worker of task `{intruder}`", checked, intruder))
    return found


def session_inputs_changed(
    checked: TaskSpec,
    read: Iterable[str],
    changed: Collection[str],
    tasks: Sequence[TaskSpec],
) -> list[str]:
    """The hook's form of `read_inputs_changed`, for an agent's session without a write
    journal: `changed` is every file that existed at the session's snapshot and differs now
    (or is gone). A file the passing check read among them fails the verdict unless it is the
    code under test or some task of the plan asks to change it or frees it (`entitled`, with
    no changer: the session works on every task)."""
    found: list[str] = []
    seen = sorted(set(read))
    for path in seen:
        if path not in changed or entitled(None, path, checked=checked, tasks=tasks, seen=seen):
            continue
        found.append(_reason(path, "this session", checked, None))
    return found


def _reason(path: str, who: str, checked: TaskSpec, intruder: str | None) -> str:
    role = check_role(checked, path)
    what = "the check's own program or test" if role == CHECKER else "an input of the check"
    if intruder is None:
        asks = "no task of the plan asks to change it"
        how = f"add `:writable: {path}` to the task that should change it"
    else:
        asks = f"task `{intruder}` does not ask to change it"
        how = f"add `:writable: {path}` to task `{intruder}` if it should change it"
    return f"input changed: the check read `{path}` ({what}), which {who} changed; {asks}; {how}"
