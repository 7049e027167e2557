"""Which names under a task's own `pytest` contract's test paths its worker may write after
all (adversary-8 F9): a path its text asks it to change ("add tests/test_mul.py with a test
for it", "add a test to tests/test_calc.py") and a `:writable:` pattern there — never
pytest's configuration, which the contract refuses unless protected. The run's fence reads
it (`supervisor.run_paths`), and lint's T030 names a `:writable:` it cannot free. It reads
the compiled spec only.
"""

from __future__ import annotations

import re

from groundskeeper.path_patterns import covering, covers, normal_path
from groundskeeper.plan.contract_syntax import protected_by, suite_args
from groundskeeper.plan.expected import asks_to_change
from groundskeeper.plan.org import Heading
from groundskeeper.plan.spec import PlanSpec, TaskSpec
from groundskeeper.pytest_files import PYTEST_CONFIGURATION, TEST_MODULES, named_as_test

__all__ = [
    "asked_but_kept",
    "later_in_order",
    "left_to_later",
    "suite_files_freed",
    "suite_files_removed",
    "suite_paths",
    "suite_tests_asked",
    "suite_tests_new",
    "suite_tests_removed",
    "suite_tests_renamed",
    "writable_kept",
]

#: task id → what its text (or `:writable:`) asks of the plan's suites
Asked = dict[str, tuple[str, ...]]
Renames = dict[str, tuple[tuple[str, str, str], ...]]


def suite_tests_asked(tasks: list[TaskSpec]) -> tuple[Asked, Asked, Renames, Asked]:
    """By task id, what each task may do to the tests under the plan's `pytest` contracts'
    test paths: the names there its worker may write after all (`suite_files_freed`:
    asked for by its text or covered by `:writable:`, adversary-8 F9), the test files its
    text asks to remove by name (`suite_files_removed`, adversary-17 F16) with the tests it
    asks to remove from a file, as `FILE::NAME` (`suite_tests_removed`, adversary-20 F7),
    and the tests it asks to rename (`suite_tests_renamed`, adversary-19 F19); and, apart,
    the new test modules it may make when its text asks for tests (`suite_tests_new`). A
    task with none is left out. The run (`RunPaths`) and `check`
    (`supervisor.suite_baselines`) read them alike."""
    suites = tuple(dict.fromkeys(p for t in tasks for p in suite_paths(t)))
    free = {t.task_id: found for t in tasks if suites and (found := suite_files_freed(t, suites))}
    removed = {
        t.task_id: found
        for t in tasks
        if t.task_id in free
        and (found := (*suite_files_removed(t, suites), *suite_tests_removed(t)))
    }
    renamed = {
        t.task_id: asked for t in tasks if t.task_id in free and (asked := suite_tests_renamed(t))
    }
    new = {t.task_id: found for t in tasks if (found := suite_tests_new(t))}
    return free, removed, renamed, new


# a path-like word of a task's text: `calc.py`, `tests/test_mul.py`, `tests/unit/`
_NAMED = re.compile(r"[\w./-]*\w\.\w+|[\w.-]+/[\w./-]*\w")


def suite_paths(task: TaskSpec) -> tuple[str, ...]:
    """The patterns the task's own `pytest` contracts protect (their test paths)."""
    return tuple(p for c in task.contracts if c.kind == "pytest" for p in protected_by((c,)))


def suite_files_freed(task: TaskSpec, suite: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The names under the task's own `pytest` contracts' test paths (or under `suite`: every
    such path of the plan) its worker may write: each path its title or text asks it to
    change and each `:writable:` pattern there, pytest's configuration aside. The contract
    still judges the suite against its red-first baseline (an added file must not carry the
    red-first tests). With `suite`, a sibling without a contract asked to add a test there
    ("Add a test … in tests/test_zero.py") adds tests a later contract counts (adversary-17
    F3)."""
    suite = suite_paths(task) if suite is None else suite
    if not suite:
        return ()
    named = [n.rstrip(".") for n in _NAMED.findall(task.heading.title + "\n" + task.heading.body)]
    asked = [n for n in dict.fromkeys(named) if covers(suite, n) and asks_to_change(task, n)]
    asked += _the_tests(task, suite)
    return tuple(
        p
        for p in dict.fromkeys((*task.writable, *asked))
        if covers(suite, p) and not covers(PYTEST_CONFIGURATION, p)
    )


#: Verbs that ask for a file to go, when the file is their object.
_REMOVING = frozenset({"remove", "delete", "drop", "erase", "purge", "prune", "rm"})
#: Words that make the named file a place, not the object: "remove X from tests/test_a.py".
_PLACE = frozenset({"from", "in", "inside", "within", "of", "at", "into", "to", "out", "on"})


def suite_files_removed(task: TaskSpec, suite: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The test files under the task's own `pytest` contracts' test paths (or under `suite`)
    that its text asks to remove outright, by name (adversary-17 F16: "Remove the obsolete
    test tests/test_old.py", "Delete tests/test_old.py"): a file the text frees
    (`suite_files_freed`: asked to change, not negated) that is the object of a removal verb
    in its sentence, at most five words before it with no preposition between ("remove the
    assertion from tests/test_a.py" edits the file). Their red-first tests may go."""
    freed = suite_files_freed(task, suite)
    if not freed:
        return ()
    found: list[str] = []
    text = task.heading.title + "\n" + task.heading.body
    for sentence in re.split(r"(?<=[.;!?])\s+|\n", text):
        raw = sentence.split()
        words = [w.strip("`'\"(),:;") for w in raw]
        for at, word in enumerate(words):
            path = normal_path(word.rstrip("."))
            if path is not None and covers(freed, path) and _removal_object(raw, words, at):
                found.append(path)
    return tuple(dict.fromkeys(found))


def _removal_object(raw: list[str], words: list[str], at: int) -> bool:
    """Whether `words[at]` is the object of a removal verb before it: at most five words
    between them in its conjunct, no preposition between, and the verb's list of objects
    may run through "and", "or" and commas when each conjunct starts with a determiner or a
    file ("Remove old_api.py and its test tests/test_old.py"; not "Remove a.py and keep
    tests/test_old.py", a verb of its own)."""
    count = 0
    first = words[at]  # the first word of the conjunct being walked back through
    for back in range(at - 1, -1, -1):
        before = words[back].lower()
        boundary = before in _AND or raw[back].endswith(",")
        if before in _PLACE:
            return False
        if before in _REMOVING:
            return True
        if boundary:
            opens = first.lower() in _DETERMINERS or "." in first or "/" in first
            if not opens:
                return False
            count = 0
            if before in _AND:
                continue
        count += 1
        if count > 5:
            return False
        first = words[back]
    return False


# "Rename [the] [test [function]] OLD [in FILE] to|as|into NEW [in FILE]" (adversary-19 F19)
_NAME = r"`?([A-Za-z_]\w*)`?(?![\w/]|\.\w)"
_FILE = r"`?([\w./-]+\.py)`?"
_RENAME = re.compile(
    r"\brename\s+(?:the\s+)?(?:(?:test\s+function|test\s+method|test\s+case|test|function|method)\s+)?"
    + _NAME
    + rf"(?:\s+(?:in|of|from)\s+{_FILE})?\s+(?:to|as|into)\s+"
    + _NAME
    + rf"(?:\s+(?:in|of)\s+{_FILE})?",
    re.IGNORECASE,
)
_NEGATION = frozenset({"not", "never", "don't", "dont", "no", "without"})


def suite_tests_renamed(task: TaskSpec) -> tuple[tuple[str, str, str], ...]:
    """(file, old, new) for each test (a function or class of a test module) the task's text
    asks to rename by name, not negated ("Rename the test test_add in tests/test_calc.py to
    test_add_positive"; the file "" when the sentence names none): a red-first test by the
    old name that runs now by the new one in the same file is moved, not gone (adversary-19
    F19). The fence still decides whether the worker may edit the file."""
    found: list[tuple[str, str, str]] = []
    text = task.heading.title + "\n" + task.heading.body
    for sentence in re.split(r"(?<=[.;!?])\s+|\n", text):
        for match in _RENAME.finditer(sentence):
            before = {w.strip("`'\"(),:;").lower() for w in sentence[: match.start()].split()}
            if before & _NEGATION:
                continue
            old, file, new, after = match.groups()
            path = normal_path((file or after or "").rstrip("."))
            if old != new:
                found.append((path or "", old, new))
    return tuple(dict.fromkeys(found))


# "Remove|Delete|Drop [the] [obsolete] [test [function]] NAME [test] [from|in FILE]": a test
# by its own name (`test_…` or a `Test…` class), so a plain word is never taken for one
_REMOVE_TEST = re.compile(
    r"\b(?:remove|delete|drop)\s+(?:the\s+)?"
    r"(?:(?:old|obsolete|stale|outdated|legacy|broken|redundant|duplicate|unused|dead)\s+)?"
    r"(?:(?:test\s+function|test\s+method|test\s+case|test|function|method)\s+)?"
    r"`?((?-i:test_\w+|Test[A-Z0-9_]\w*))`?(?![\w/]|\.\w)"
    r"(?:\s+(?:test\s+function|test\s+method|test\s+case|test|function|method))?"
    rf"(?:\s+(?:from|in|of)\s+{_FILE})?",
    re.IGNORECASE,
)


def suite_tests_removed(task: TaskSpec) -> tuple[str, ...]:
    """The tests the task's text asks to remove by name, not negated, each as `FILE::NAME`
    (`::NAME` when the sentence names no file): "Remove the obsolete test_legacy test from
    tests/test_calc.py" (adversary-20 F7). A red-first test by that name (a function, or a
    class and its methods) that no longer runs from that file is removed as asked, not gone;
    the fence still decides whether the worker may edit the file."""
    found: list[str] = []
    text = task.heading.title + "\n" + task.heading.body
    for sentence in re.split(r"(?<=[.;!?])\s+|\n", text):
        for match in _REMOVE_TEST.finditer(sentence):
            before = {w.strip("`'\"(),:;").lower() for w in sentence[: match.start()].split()}
            if before & _NEGATION:
                continue
            name, file = match.groups()
            path = normal_path(file.rstrip(".")) if file else ""
            if path is not None:
                found.append(f"{path}::{name}")
    return tuple(dict.fromkeys(found))


#: Words that join the objects of one verb.
_AND = frozenset({"and", "or"})
#: Words a further object of the same verb starts with ("and its test …", "and the module …").
_DETERMINERS = frozenset({"the", "its", "their", "a", "an", "all", "both", "every", "each"})


def suite_tests_new(task: TaskSpec) -> tuple[str, ...]:
    """The test module names under the task's own `pytest` contracts' test paths
    (`tests/**/test_*.py`, `tests/**/*_test.py`) its worker may make when its text asks for
    tests ("Add sub to calc.py and write a unit test for it", "Fix it and add a regression
    test"; `plan.expected.asks_for_tests`, the reading a plain check's inputs get too:
    adversary-20 F2). New ones only: a test file there before the work stays protected
    (`RunPaths.worker_fence`), so asking for tests never frees the tests the contract
    judges with, and the new module's tests are judged apart (`acceptance.contracts`). A
    text that names the test file its tests go to frees that file alone."""
    suite = suite_paths(task)
    if not suite:
        return ()
    from groundskeeper.plan.expected import asks_for_tests

    if not asks_for_tests(task):
        return ()
    if any(named_as_test(n) for n in suite_files_freed(task)):
        return ()  # the text names where its tests go ("add tests/test_mul.py with a test")
    found = [f"{base}/**/{name}" for base in _suite_bases(suite) for name in TEST_MODULES]
    return tuple(dict.fromkeys(found))


def _the_tests(task: TaskSpec, suite: tuple[str, ...]) -> list[str]:
    """The test files under each of `suite`'s paths, as patterns (`tests/**/test_*.py`), when
    the task's text asks to change "the tests" without naming one ("Update the tests so they
    expect the new totals"; `plan.expected.check_test_file`): the reading asked of a test
    file there that the text does not name."""
    found: list[str] = []
    for base in _suite_bases(suite):
        for name in TEST_MODULES:
            probe = f"{base}/{name.replace('*', 'x-unnamed')}"
            if asks_to_change(task, probe):
                found.append(f"{base}/**/{name}")
    return found


def _suite_bases(suite: tuple[str, ...]) -> list[str]:
    """The directories of `suite`'s test paths (`tests/**/*`: `tests`); a path naming a file
    has none (it is freed by its name, if a text names it)."""
    found: list[str] = []
    for path in suite:
        parts = path.strip("/").split("/")
        glob = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), len(parts))
        base = "/".join(parts[:glob])
        if base and not base.endswith(".py"):
            found.append(base)
    return found


def writable_kept(task: TaskSpec) -> tuple[str, ...]:
    """The task's `:writable:` patterns under its own `pytest` contract's test paths that the
    contract keeps protected anyway: pytest's configuration (lint T030)."""
    suite = suite_paths(task)
    freed = suite_files_freed(task)
    return tuple(p for p in task.writable if covers(suite, p) and p not in freed)


def asked_but_kept(task: TaskSpec, hide: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """(file, pattern, property) for each file the task's title or text asks its worker to
    change (`asks_to_change`) that one of its own `:protect:`/`#+PROTECT:` patterns, or a
    `:hide:`/`#+HIDE:` pattern of the run (`hide`), covers, and that the run's fence does not
    free (`suite_files_freed`; never a hidden one): the fence refuses that write in every
    spelling the matcher covers (another letter case, any depth), and the ask does not free
    it, so the task cannot be done as written (lint T032). The pattern is the first that
    covers the file (`path_patterns.covering`), as the run's refusal names it."""
    free = suite_files_freed(task)
    text = task.heading.title + "\n" + task.heading.body
    found: list[tuple[str, str, str]] = []
    for name in dict.fromkeys(n.rstrip(".") for n in _NAMED.findall(text)):
        path = normal_path(name)
        if path is None:
            continue
        protect = None if covers(free, path) else covering(task.protect, path)
        kept = [
            (pattern, kind)
            for pattern, kind in ((covering(hide, path), "hide"), (protect, "protect"))
            if pattern is not None
        ]
        if kept and asks_to_change(task, name):
            found.append((path, *kept[0]))
    return tuple(found)


def later_in_order(spec: PlanSpec) -> dict[str, tuple[TaskSpec, ...]]:
    """Each task → the tasks with a `pytest` contract that start only once it is DONE: those
    below a later sibling of it (or of a heading above it) under an `:ORDERED:` heading
    (`plan.tree`'s walk). A task with none is left out."""
    found: dict[str, list[TaskSpec]] = {}

    def tasks_under(heading: Heading) -> list[Heading]:
        below = [heading] if heading.is_task else []
        for child in heading.children:
            below += tasks_under(child)
        return below

    for heading in spec.plan.walk():
        if not heading.ordered:
            continue
        children = [tasks_under(c) for c in heading.children]
        for at, earlier in enumerate(children):
            later = [spec.of(h) for c in children[at + 1 :] for h in c if h in spec.tasks]
            later = [t for t in later if suite_paths(t)]
            for h in earlier:
                if later and h in spec.tasks:
                    found.setdefault(h.task_id, []).extend(later)
    return {k: tuple(dict.fromkeys(v)) for k, v in found.items()}


def left_to_later(task: TaskSpec, later: tuple[TaskSpec, ...], test: str) -> str | None:
    """The later task of an ORDERED sequence (`later_in_order`) a test failing at `task`'s
    claim is left to (adversary-19 F22), if any: the first whose `pytest` contract runs the
    test's file and whose text names the test, when `task`'s text does not. A test names
    itself by its id, its function and the name it tests (`mul` for test_mul), each as a
    whole word, in letter case as written: "Fix mul in calc.py" names test_mul. A `soft`
    contract holds no test (adversary-28 F9): a test left to it would be held by nothing."""
    if _names_test(task, test):
        return None
    file = test.split("::", 1)[0]
    for other in later:
        runs = any(
            (path := suite_args(c.args)[0]) == "." or file == path
            or file.startswith(path.rstrip("/") + "/")
            for c in other.contracts if c.kind == "pytest" and not c.soft
        )  # fmt: skip
        if runs and _names_test(other, test):
            return other.task_id
    return None


def _names_test(task: TaskSpec, test: str) -> bool:
    text = task.heading.title + "\n" + task.heading.body
    function = test.rsplit("::", 1)[-1].partition("[")[0]
    subject = function.removeprefix("test_").removesuffix("_test")
    names = {test, test.partition("[")[0], function}
    if subject and subject != function:
        names.add(subject)
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text) for n in names if n)
