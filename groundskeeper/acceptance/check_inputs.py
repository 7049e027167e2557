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
- a program the check runs from the workdir (`python3 check.py`, a `-m` module's
  file) is the checker's — not one run only for its output, which a comparison judges
  (`python3 render.py | diff - golden`: `plan.programs.judged_programs`), the code under
  test — and so, when the check runs no test runner (pytest, unittest), is
  every `.py` file it read: the modules that program imports (`lib/judge.py` beside
  `tools/check.py` as much as `tools/judge.py`) are its library, wherever they lie; the code
  a task asks to change by name is freed by that asking (`entitled`), not by its role. With a
  test runner beside it, the `.py` files in the program's directory and below;
- a unittest check (`python3 -m unittest discover -s tests`) the same: its start directory
  is its test path, and a `test*.py` anywhere is the checker's;
- a module named as the tests' helper, data or judge (`testkit.py`, `test_helpers.py`,
  `expected_values.py`, `fixtures.py`, `oracle.py`, `reference_impl.py`, `judge.py`: a name
  word `test`, `tests`, `testing`, `testkit`, `testutils`, `expected`, `golden`,
  `fixture(s)`, `assertion(s)`, `oracle`, `reference`, `judge`, `checker`, `verify`,
  `verifier`, `grader`, `grading`, `validator`, `truth`) is the checker's wherever it lies:
  the tests import it to judge, not to be judged; and, when the task's text names the
  module to fix, one the tests import that the named code does not (`work_modules.
  reference_modules`, read before the work and passed as `data`);
- any other `.py` file (and its `__pycache__` bytecode) is the code under test;
- anything else is data the check derives its answer from: the checker's.

A file a worker MADE during the work (not there before it) that a passing check read is held
too when it sits on the check's side (`made_side`): what `check_role` calls the checker's
(a new `tests/calc.py` under a test path shadows the code under test: pytest's prepend mode
and unittest's start directory put that directory first on `sys.path`; a new `tools/calc.py`
beside a checker program), an `__init__.py` of a test path's directory or one above it,
`conftest.py`, `sitecustomize.py`, `usercustomize.py` or a `.pth` anywhere, a file beside a
checker program, and a module whose name shadows one that was elsewhere before the work.
Unless the maker is entitled to it: its text names it, `:writable:` covers it, or — a test
file (`test_*.py`) only — its text asks for tests ("Add a test for mul"); or it is a
checker program's library only by its role and only the work imports it
(`acceptance.work_modules`: the asked `solver2.py` importing the worker's `parse2.py`).

It owns that rule; it does not run checks or record writes (the sandbox does), nor decide a
task's state (the runner does, with the reasons this returns).
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from groundskeeper.fastclass import fastclass
from groundskeeper.path_patterns import covers, naming
from groundskeeper.plan.listed import listed_directories
from groundskeeper.plan.spec import TaskSpec
from groundskeeper.plan.test_paths import pytest_paths, runs_pytest_check, runs_unittest, test_paths
from groundskeeper.pytest_files import is_test_module

__all__ = [
    "CHECKER",
    "CODE",
    "DATA",
    "Writer",
    "check_role",
    "entitled",
    "gone_side",
    "inputs_gone",
    "listed_directories",
    "made_side",
    "may_remove",
    "module_index",
    "pytest_paths",
    "read_inputs_changed",
    "read_inputs_made",
    "runs_unittest",
    "sealed_side",
    "session_inputs_changed",
    "session_inputs_made",
    "test_paths",
]

#: What a file a check read is to that check.
CODE, CHECKER, DATA = "code", "checker", "data"

_TEST_NAMES = ("test_*.py", "*_test.py", "conftest.py")
#: A test file's names (pytest's defaults): a test runner's to collect, no module to import.
_TEST_FILE_NAMES = ("test_*.py", "*_test.py")
#: unittest's default discovery pattern (`-p`/`--pattern` changes it; the default covers
#: `test_*.py` and the rest).
_UNITTEST_NAMES = ("test*.py",)
#: Files that change what any Python interpreter of the check loads, wherever they lie.
_HOOK_NAMES = ("conftest.py", "sitecustomize.py", "usercustomize.py", "*.pth")

#: `made_side`'s words for a file the check's role alone puts on its side (a checker
#: program's library, wherever it lies).
_LIBRARY = "the check's own program, test or data"


@fastclass(frozen=True, slots=True)
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


def _doctest_modules(text: str) -> tuple[str, ...]:
    from groundskeeper.acceptance.doctests import doctest_modules

    return doctest_modules(text)


def _helper_name(source: str) -> bool:
    """Whether a module's name says it is the tests' helper or data (`plan.programs`)."""
    from groundskeeper.plan.programs import checker_named

    return checker_named(source)


def _names_file(task: TaskSpec, path: str) -> bool:
    """Whether the task's title or text names `path` itself, by its full relative path."""
    from groundskeeper.plan.expected import task_text

    found = re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w/-])", task_text(task))
    return found is not None


def _key_named(path: str) -> bool:
    """Whether a file's name, or a folder it is in, says it is the tests' key or data
    (`golden/totals.txt`, `expected/out.txt`, `fixtures/cases.json`): a common word that is
    its stem ("fix the Q4 totals") never names it (adversary-28b F3), only its full name."""
    from groundskeeper.plan.programs import HELPER_WORDS

    words = [w for part in path.casefold().split("/") for w in re.split(r"[_.\-]", part) if w]
    return any(w in HELPER_WORDS for w in words)


def _under(source: str, path: str) -> bool:
    return path in ("", ".") or source == path or source.startswith(path.rstrip("/") + "/")


def _programs(task: TaskSpec) -> tuple[tuple[str, str], ...]:
    """(how, path) of each workdir program the task's check runs (`plan.programs`)."""
    check = task.check
    if check is None:
        return ()
    found = _programs_of(check.text)
    from groundskeeper.plan.programs import judged_programs

    if not judged_programs(check.text):
        return found
    # run for the output a comparison judges: the code under test, unless the task frees
    # the file compared with (then that file is the work, and the program its reference)
    from groundskeeper.plan.expected import judged_code

    judged = judged_code(task)
    return tuple((how, path) for how, path in found if path not in judged)


@functools.lru_cache(maxsize=1024)
def _programs_of(text: str) -> tuple[tuple[str, str], ...]:
    from groundskeeper.plan.programs import command_programs

    found = command_programs(text)
    if isinstance(found, str):
        return ()
    # `-m compileall`, `-m json.tool`: the standard library's programs are no checker of
    # the project's (a workdir module of that name is a shadow, which `made_side` holds)
    return tuple(
        (p.how, path)
        for p in found
        for path in p.paths
        if not (p.how == "module" and path.split("/")[0].split(".")[0] in sys.stdlib_module_names)
    )


def check_role(task: TaskSpec, path: str) -> str:
    """What `path` (relative, `/`-separated), read by the task's check, is to it: CODE (the
    code under test: the work), CHECKER (the check's own program, tests or their helpers) or
    DATA (what the check derives its verdict from: the checker's too). See the module."""
    code = _is_code(path)
    source = _source_of(path) if code else path
    name = posixpath.basename(source)
    unittest = runs_unittest(task)
    if runs_pytest_check(task) or unittest:
        names = _TEST_NAMES + (_UNITTEST_NAMES if unittest else ())
        if code and any(fnmatch.fnmatchcase(name, p) for p in names):
            return CHECKER
        if code and task.check is not None and source in _doctest_modules(task.check.text):
            return CODE  # `pytest --doctest-modules mathx.py`: the work, its examples held
        for test_path in test_paths(task):
            if test_path != "." and _under(source, test_path):
                return CHECKER
    if code and source.endswith(".py") and _helper_name(source):
        return CHECKER
    programs = _programs(task)
    if any(source == program for _how, program in programs):
        return CHECKER
    if code and programs and not (runs_pytest_check(task) or unittest):
        return CHECKER  # a checker program's imports: its library, wherever it lies
    for how, program in programs:
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
    data: Collection[str] = (),
) -> bool:
    """Whether a change to `path` is the work, for the check of task `checked`: the file is the
    code under test there, or the changing task's text asks to change it, or its `:writable:`
    covers it. `changer` None (an agent's session, which works on every task): some task of
    `tasks` asks for it or frees it. `seen`: the other files the check read — when none
    shares the file's stem, the stem alone names it ("update the report"). `data`: the
    modules that held only values before the work (`work_modules.data_modules`: a test's
    expected `CASES`), which are the check's data, not code under test (adversary-19 F20)."""
    role = check_role(checked, path)
    if role == CODE and path not in data:
        return True
    among = [changer] if changer is not None else list(tasks)
    return any(
        covers(t.writable, path)
        or asks_to_change(t, path, sole_stem=_stem_names(checked, t, path, seen, role))
        for t in among
    )


def asks_to_change(task: TaskSpec, path: str, *, sole_stem: bool = False) -> bool:
    """`plan.expected.asks_to_change`, imported at its first use: the text reading compiles
    some thirty patterns (~10 ms of every hook start, whose checks' inputs seldom change)."""
    from groundskeeper.plan.expected import asks_to_change as reading

    return reading(task, path, sole_stem=sole_stem)


def _stem_names(
    checked: TaskSpec, asker: TaskSpec, path: str, seen: Iterable[str], role: str
) -> bool:
    """Whether the stem alone may name `path` in `asker`'s text (`plan.expected.stem_names`),
    never for the check's own program, test or helper (`check_role` CHECKER)."""
    if role == CHECKER or _key_named(path):
        return False
    from groundskeeper.plan.expected import stem_names

    return stem_names(checked, asker, path, list(seen))


def read_inputs_changed(
    checked: TaskSpec,
    read: Iterable[str],
    writes: Mapping[str, Sequence[str]],
    existed: Collection[str] | Callable[[str], bool],
    specs: Mapping[str, TaskSpec],
    data: Collection[str] = (),
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
            if spec is not None and entitled(spec, path, checked=checked, seen=seen, data=data):
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
    data: Collection[str] = (),
) -> list[str]:
    """The hook's form of `read_inputs_changed`, for an agent's session without a write
    journal: `changed` is every file that existed at the session's snapshot and differs now
    (or is gone). A file the passing check read among them fails the verdict unless it is the
    code under test or some task of the plan asks to change it or frees it (`entitled`, with
    no changer: the session works on every task)."""
    found: list[str] = []
    seen = sorted(set(read))
    for path in seen:
        if path not in changed or entitled(
            None, path, checked=checked, tasks=tasks, seen=seen, data=data
        ):
            continue
        found.append(_reason(path, SINCE_SEALED, checked, None))
    return found


def module_index(paths: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each importable module name among `paths` (a `m.py`, a package `m/__init__.py`) → the
    directories it lies in: what a new module's name could shadow."""
    found: dict[str, set[str]] = {}
    for path in paths:
        name = _module_name(path)
        if name is not None:
            found.setdefault(name[0], set()).add(name[1])
    return {k: frozenset(v) for k, v in found.items()}


def _module_name(path: str) -> tuple[str, str] | None:
    """(module name, the directory it is imported from) of a `.py` file or a package's
    `__init__.py`; None for any other file."""
    if not path.endswith(".py"):
        return None
    directory, base = posixpath.split(path)
    if base == "__init__.py":
        if not directory:
            return None
        directory, base = posixpath.split(directory)
        return base, directory
    return base[: -len(".py")], directory


def made_side(
    checked: TaskSpec,
    path: str,
    before: Mapping[str, frozenset[str]] | None = None,
    listed: Collection[str] = (),
) -> str | None:
    """Where a file a worker made during the work (`path`), read by the task's check, sits
    on the check's side, said in a few words; None: it is the work (the code under test, a
    deliverable). `before`: the modules there before the work (`module_index`), for a name
    that shadows one of them. `listed`: the folders the check's run listed (its read set),
    for one it chose a file from by listing, whatever the spelling (adversary-28 F6: a
    Python `glob` over a folder of accepted answers, the worker's own answer added to it).
    See the module."""
    name = posixpath.basename(path)
    if any(fnmatch.fnmatchcase(name, p) for p in _HOOK_NAMES):
        return "a file that configures the Python the check runs, at any depth"
    tests = [t for t in test_paths(checked) if t != "."]
    if name == "__init__.py":
        package = posixpath.dirname(path)
        for test_path in tests:
            if _under(test_path, package) or _under(posixpath.dirname(test_path), package):
                return f"a package holding the check's test path `{test_path}`"
    for test_path in tests:
        if _under(path, test_path):
            return f"under the check's test path `{test_path}`"
    for how, program in _programs(checked):
        directory = posixpath.dirname(program)
        if path == program or (how != "module" and directory and _under(path, directory)):
            return f"beside the check's program `{program}`"
    module = _module_name(path)
    if module is not None and before:
        elsewhere = sorted(d for d in before.get(module[0], ()) if d != module[1])
        if elsewhere:
            where = f"{elsewhere[0]}/" if elsewhere[0] else "the workdir's top"
            return f"a module that shadows the `{module[0]}` that was in {where} before the work"
    if check_role(checked, path) == CHECKER:
        if path.endswith(".py") and _helper_name(path):
            return "a module named as the tests' helper or data"
        return _LIBRARY
    named = next((d for d in listed_directories(checked) if _under(path, d)), None)
    if named is not None:
        return f"{_LISTED}{named}/`, a directory the check lists to choose which file it reads"
    folder = posixpath.dirname(path)
    if (
        folder
        and folder in listed
        and check_role(checked, path) != CODE
        and not (runs_pytest_check(checked) or runs_unittest(checked))  # they walk the tree
    ):
        return f"{_LISTED}{folder}/`, a folder the check listed to choose which file it reads"
    return None


_LISTED = "in `"  # the side of a file in a folder the check lists


def _may_make(
    task: TaskSpec, path: str, seen: Iterable[str], checked: TaskSpec, side: str | None = None
) -> bool:
    """Whether the task may make `path` on its check's side: its text names the file,
    `:writable:` covers it, or it is a test file and the text asks for tests; one in a folder
    the check lists (`side`), also when the text asks for the folder ("write the report in
    reports/"): the check chooses among what is there, and the work goes there."""
    if covers(task.writable, path):
        return True
    folder = posixpath.dirname(path)
    if (
        side is not None
        and side.startswith(_LISTED)
        and (asks_to_change(task, folder + "/") or _names_file(task, path))
    ):
        return True  # a new file in it that the text names ("add a case cases/c.in (3)
        # with cases/c.out (6)"), or the folder it asks for: a file it did not name is not
    stem = _stem_names(checked, task, path, seen, check_role(checked, path))
    if asks_to_change(task, path, sole_stem=stem):
        return True
    if not is_test_module(path):
        return False
    from groundskeeper.plan.expected import asks_for_tests

    return asks_for_tests(task)


def _freed(
    checked: TaskSpec,
    seen: Sequence[str],
    sides: Mapping[str, str],
    own: Callable[[str], bool],
    text_of: Callable[[str], str | None] | None,
) -> frozenset[str]:
    """The made files held only as a checker program's library that only the work imports
    (`acceptance.work_modules`): `own` says whether the checked task's worker alone made one."""
    if text_of is None or checked.check is None:
        return frozenset()

    def asked(path: str) -> bool:
        return _may_make(checked, path, seen, checked)

    candidates = [p for p, side in sides.items() if side == _LIBRARY and own(p) and not asked(p)]
    if not candidates:
        return frozenset()
    from groundskeeper.acceptance.work_modules import work_modules

    return work_modules(candidates, seen, asked, checked.check.text, text_of)


def read_inputs_made(
    checked: TaskSpec,
    read: Iterable[str],
    made: Mapping[str, Sequence[str]],
    specs: Mapping[str, TaskSpec],
    before: Mapping[str, frozenset[str]] | None = None,
    text_of: Callable[[str], str | None] | None = None,
    listed: Collection[str] = (),
) -> list[str]:
    """Why a pass of `checked`'s check must not stand, for the files it `read` that a worker
    MADE during the work (`made`: file → the ids of the tasks whose workers wrote it, its
    maker first): each that sits on the check's side (`made_side`) and that some writer was
    not entitled to make (`_may_make`), one named reason — except a module the checked
    task's worker made that only the work imports (`_freed`; `text_of` reads a file's text
    now, and without it nothing is freed). A writer missing from `specs` is never entitled."""
    found: list[str] = []
    seen = sorted(set(read))
    sides = {
        path: side
        for path in seen
        if path in made and (side := made_side(checked, path, before, listed)) is not None
    }
    freed = _freed(
        checked,
        seen,
        sides,
        lambda path: set(made[path]) == {checked.task_id},
        text_of,
    )
    for path in seen:
        writers = made.get(path)
        side = sides.get(path)
        if writers is None or side is None or path in freed:
            continue
        intruder = next(
            (
                t for t in writers
                if (spec := specs.get(t)) is None
                or not _may_make(spec, path, seen, checked, side)
            ),
            None,
        )  # fmt: skip
        if intruder is None:
            continue
        found.append(_made_reason(path, side, f"the worker of task `{intruder}`", intruder))
    return found


def session_inputs_made(
    checked: TaskSpec,
    read: Iterable[str],
    new: Collection[str],
    tasks: Sequence[TaskSpec],
    before: Mapping[str, frozenset[str]] | None = None,
    text_of: Callable[[str], str | None] | None = None,
    listed: Collection[str] = (),
) -> list[str]:
    """The hook's form of `read_inputs_made`: `new` is every file the check read that the
    session's snapshot does not hold. One on the check's side fails the verdict unless some
    task of the plan may make it (`_may_make`: the session works on every task), or only the
    work imports it (`_freed`, the session being the checked task's worker)."""
    found: list[str] = []
    seen = sorted(set(read))
    sides = {
        path: side
        for path in seen
        if path in new and (side := made_side(checked, path, before, listed)) is not None
    }
    freed = _freed(checked, seen, sides, lambda _path: True, text_of)
    for path in seen:
        side = sides.get(path)
        if side is None or path in freed:
            continue
        if any(_may_make(t, path, seen, checked, side) for t in tasks):
            continue
        found.append(_made_reason(path, side, SINCE_SEALED, None))
    return found


#: The hook's `who`: it judges the workdir against the one sealed for agents (`agent setup`,
#: `agent seal`), not against one session's start — a change it finds may be an earlier
#: session's, or the user's, so it says when, not who.
SINCE_SEALED = ""


def _did(who: str, verb: str, *, during: str = "") -> str:
    """`who` `verb` (`during`), or, for the hook (`SINCE_SEALED`), when."""
    if who == SINCE_SEALED:
        return f"was {verb} since the plan was sealed for agents (`agent setup`, `agent seal`)"
    return f"{who} {verb}{during}"


def _made_reason(path: str, side: str, who: str, intruder: str | None) -> str:
    if intruder is None:
        asks = "no task of the plan asks for it"
        how = f"add `:writable: {naming(path)}` to the task that should write it"
    else:
        asks = f"task `{intruder}` does not ask for it"
        how = f"add `:writable: {naming(path)}` to task `{intruder}` if it should write it"
    if side.startswith("under the check's test path") and path.rsplit("/", 1)[-1].startswith(
        "test"
    ):  # a new test module runs at collection, before any test: asked for, it may be there
        how += ', or ask for tests in its text ("add a regression test")'
    return (
        f"input made: the check read `{path}` ({side}), which"
        f" {_did(who, 'made', during=' during the work')};"
        f" {asks}; {how}"
    )


def _reason(path: str, who: str, checked: TaskSpec, intruder: str | None) -> str:
    role = check_role(checked, path)
    what = "the check's own program or test" if role == CHECKER else "an input of the check"
    if role == CODE:  # a module holding only values (`entitled`'s `data`)
        what = "a module of values the check reads, as data"
    if intruder is None:
        asks = "no task of the plan asks to change it"
        how = f"add `:writable: {naming(path)}` to the task that should change it"
    else:
        asks = f"task `{intruder}` does not ask to change it"
        how = f"add `:writable: {naming(path)}` to task `{intruder}` if it should change it"
    if role == CHECKER and is_test_module(path) and _asks_for_tests(checked):
        # a test asked for goes in a module of its own (adv24 H5): this one's module-level
        # code runs before every test, so a change to it is no test added
        folder = posixpath.dirname(path)
        how += (
            f", or, for the tests the task asks for, leave `{path}` as it was and put them in"
            f" a new test module beside it (`{posixpath.join(folder, 'test_<topic>.py')}`)"
        )
    done = _did(who, "changed")
    return f"input changed: the check read `{path}` ({what}), which {done}; {asks}; {how}"


def _asks_for_tests(task: TaskSpec) -> bool:
    """`plan.expected.asks_for_tests`, imported only on this refusal's path (see
    `asks_to_change`)."""
    from groundskeeper.plan.expected import asks_for_tests

    return asks_for_tests(task)


def sealed_side(
    tasks: Sequence[TaskSpec],
    path: str,
    change: str,
    before: Mapping[str, frozenset[str]] | None = None,
) -> str | None:
    """Where a file the user's re-seal would take as it is now sits on a check's side, said in
    a few words; None: it is the work. `change`: how it differs from the workdir last sealed
    (`changed`, `removed`, or `added`); `before`: the modules there then (`module_index`).

    The seal has no read set (no check runs there), so a check is taken to read any file:
    a changed or removed file is the check's when some task's check would hold it if it read
    it (`session_inputs_changed`: not the code under test, and no task asks to change it or
    frees it); an added one when it sits on a check's side (`session_inputs_made`). The hook's
    rule, read for every check at once: what a stop would be refused for, the seal does not
    take silently."""
    checked = [t for t in tasks if t.check is not None]
    if change == "added":
        for task in checked:
            side = made_side(task, path, before)
            if side is not None and not any(_may_make(t, path, (), task) for t in tasks):
                return f"{side}, for task `{task.task_id}`"
        return None
    for task in checked:
        if entitled(None, path, checked=task, tasks=tasks):
            continue
        role = check_role(task, path)
        what = "the check's own program or test" if role == CHECKER else "an input a check may read"
        return f"{what}, for task `{task.task_id}`"
    return None


def _data_folders(
    checked: TaskSpec, read: Iterable[str], listed: Iterable[str] = ()
) -> frozenset[str]:
    """The folders (never the workdir's top) holding a file the check read that is not the
    code under test: a case folder it walks (`for n in os.listdir("cases")`); and each folder
    it `listed` (a glob, `os.listdir`, `ls`, `find`: `ReadSet.listed_folders`), though it read
    no file there — the loop over cases a worker removed runs zero times (adversary-17 F10).
    Not the folders a test runner's collection lists (pytest walks the whole tree): its
    tests are held by their test paths (`gone_side`)."""
    found = set()
    for path in read:
        folder = posixpath.dirname(path)
        if folder and check_role(checked, path) != CODE:
            found.add(folder)
    if not (runs_pytest_check(checked) or runs_unittest(checked)):
        found.update(f for f in listed if f not in ("", "."))
    return frozenset(found)


def gone_side(checked: TaskSpec, path: str, folders: Collection[str] = ()) -> str | None:
    """Where a file that was there before the work and is gone now (removed, renamed, made
    unreadable or a directory) sat on the check's side, in a few words; None: the work may
    remove it (the code under test, a file no check reads). `folders`: the folders the
    passing check read its data from (`_data_folders`). The check's side: under a test path
    of a pytest or unittest check (with none named, a test file anywhere), the check's
    program and the folder it lies in (not the workdir's top), a module named as the tests'
    helper or data when the check runs Python (never a test file: it is the check's only
    where the check collects it), and a file in a folder the check read its data from."""
    name = posixpath.basename(path)
    tests = [t for t in test_paths(checked) if t != "."]
    for test_path in tests:
        if _under(path, test_path):
            return f"under the check's test path `{test_path}`"
    unittest = runs_unittest(checked)
    if (runs_pytest_check(checked) or unittest) and not tests:
        names = _TEST_NAMES + (_UNITTEST_NAMES if unittest else ())
        if any(fnmatch.fnmatchcase(name, p) for p in names):
            return "a test file the check collects"
    programs = _programs(checked)
    for how, program in programs:
        directory = posixpath.dirname(program)
        if path == program:
            return "the check's own program"
        if how != "module" and directory and _under(path, directory):
            return f"beside the check's program `{program}`"
    # a helper the check's Python imports; a test file is the check's only where it collects
    # it (above): a sibling's removed test is no loss to a check that never ran it
    runs_python = bool(programs) or unittest or runs_pytest_check(checked)
    test_file = any(fnmatch.fnmatchcase(name, p) for p in _TEST_FILE_NAMES)
    if runs_python and not test_file and path.endswith(".py") and _helper_name(path):
        return "a module named as the tests' helper or data"
    folder = posixpath.dirname(path)
    if folder in folders and not (_is_code(path) and check_role(checked, path) == CODE):
        return f"in `{folder}/`, a folder the check read its data from"
    return None


def inputs_gone(
    checked: TaskSpec,
    before: Iterable[str],
    gone: Callable[[str], bool],
    read: Iterable[str],
    may_remove: Callable[[str], bool],
    who: str | Callable[[str], tuple[str, str]],
    listed: Iterable[str] = (),
) -> list[str]:
    """Why a pass of `checked`'s check must not stand for what is missing from it: each file
    of `before` (there before the work: the sealed snapshot, the run's start) on the check's
    side (`gone_side`) that is `gone` now and that no one entitled removed (`may_remove`: a
    task's text asks to change it, `:writable:` covers it), one named reason. A deleted or
    renamed failing test, a case file a checker loops over: the check passes on less than it
    was sealed to judge (adversary-14 F4). `who`: "a worker of the run", the hook's
    `SINCE_SEALED`, or a path → (who removed it, when: "" or " in an earlier run of the
    plan"). `listed`: the folders the passing check listed (`_data_folders`)."""
    folders = _data_folders(checked, read, listed)
    found: list[str] = []
    for path in sorted(set(before)):
        side = gone_side(checked, path, folders)
        if side is None or not gone(path) or may_remove(path):
            continue
        remover, when = who(path) if callable(who) else (who, "")
        found.append(
            f"input gone: `{path}` ({side}) was there before the work, which"
            f" {_did(remover, 'removed', during=when)} (or renamed, or made unreadable):"
            " the check passes without judging it;"
            f" put it back, or, if it should go, say so in a task's text or add"
            f" `:writable: {path}` to the task that removes it"
        )
    return found


def may_remove(tasks: Sequence[TaskSpec], path: str) -> bool:
    """Whether some task of `tasks` is entitled to remove `path`: its text asks to change it
    (names it as the object of a changing verb: "delete tests/test_old.py"), asks to remove
    the files of a pattern or a kind it matches ("delete the *.tmp files in out/", "remove
    every .tmp file there", adversary-24c H2), or `:writable:` covers it."""
    from groundskeeper.plan.expected import asks_to_remove_matching

    return any(
        covers(t.writable, path) or asks_to_change(t, path) or asks_to_remove_matching(t, path)
        for t in tasks
    )
