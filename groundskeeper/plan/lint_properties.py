"""Lint of a task's acceptance properties, read from the compiled spec: protected inputs
(T014, T025, T028, T032), contracts and evidence (T015–T020), the judge (J001–J006) and
gates (G001–G004).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.path_patterns import covering, covers, naming, pattern_problem
from groundskeeper.plan.asking import naming_stem
from groundskeeper.plan.contract_syntax import SHAPES, Contract, judged_on_files, suite_args
from groundskeeper.plan.expected import (
    PYTEST_CONFIGURATION,
    UNSURE,
    asks_to_change,
    check_test_file,
    checksum_lists_of,
    compared_by,
    existing_files,
    programs_run_by,
    reading,
    runs_pytest_check,
    seems_about,
    stem_names,
    task_programs,
    task_text,
    unsure_message,
)
from groundskeeper.plan.org import Heading
from groundskeeper.plan.programs import command_programs, judged_programs
from groundskeeper.plan.properties import GATE_KINDS, command_matches
from groundskeeper.plan.spec import PlanSpec, TaskSpec
from groundskeeper.pytest_files import is_test_module

if TYPE_CHECKING:
    pass


def protection_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T014: a check compares against a file that exists and that its worker can read, so
    it could copy the expectation instead of meeting it (a run protects such a file from
    change on its own, unless `:writable:` frees it) — never a file a task's text asks a
    worker to make or change, which is the work; T025: a check runs pytest itself without
    the `pytest` contract; F001: a path pattern naming nothing inside the workdir; F003: a
    hidden `:judge-files:` path."""
    yield from _pattern_diagnostics(spec)
    yield from _hidden_judge_files(spec)
    yield from _pytest_checks(spec)
    yield from _python_checks(spec)
    yield from _writable_kept(spec)
    yield from _asked_but_kept(spec)
    if spec.plan.path is None:
        return
    base = spec.plan.path.parent
    tasks = list(spec)
    yield from _unsure_asks(tasks, base)
    yield from _unasked_reads(tasks, base)
    yield from _changed_later(tasks, base)
    yield from _venv_packages(tasks, base)
    yield from _src_layout(tasks, base)
    for task in tasks:
        check = task.check
        if check is None:
            continue
        compared = compared_by(check.language, check.text)
        programs = task_programs(task)
        named = {f: c in programs for c in compared + programs for f in existing_files(base, c)}
        sums = checksum_lists_of(check.language, check.text)
        told = False
        for name, program in named.items():
            # a file a task of the plan makes or changes is the work, not its expectation
            if covers(task.hide, name):
                if not program and not told and (judged := judged_programs(check.text)):
                    told = True
                    yield _hidden_for_the_judged(task, name, sorted(judged)[0])
                continue
            makers = [t for t in tasks if asks_to_change(t, name)]
            if makers:
                # the work the key is compared with: a file the task asks for, or not there yet
                work = [c for c in compared if c != name and (c not in named or
                        asks_to_change(task, c))]  # fmt: skip
                yield from _key_made_elsewhere(task, name, makers, work)
                continue
            message = _t014_message(task, name, program=program, checksums=name in sums)
            yield Diagnostic("warning", task.heading.title, message, check.line, "T014")
            yield from _writable_elsewhere(task, name, tasks)


def _hidden_for_the_judged(task: TaskSpec, name: str, program: str) -> Diagnostic:
    """T045 (adv24 F5): a hidden file compared with the output of the code under test. Hiding
    keeps it from the worker's tools and from what groundskeeper says, not from the program
    the check runs for its output: that is the work, and it can open the file and print it
    (docs/plans.md: hidden inputs and "code it wrote to go looking for them")."""
    message = (
        f"check compares the output of `{program}`, the code under test, with the hidden"
        f" `{name}`: hiding keeps it from the worker's tools, not from that program while the"
        " check runs it, which could open it and print it; feed the program an input of the"
        " check's own and compare with a key it cannot derive from the workdir (a checksum"
        f" list, `sha256sum -c`), or judge it with tests that do not show `{name}`"
    )
    line = task.check.line if task.check is not None else None
    return Diagnostic("warning", task.heading.title, message, line, "T045")


def _t014_message(task: TaskSpec, name: str, *, program: bool, checksums: bool) -> str:
    """T014's words for `name`: a program the check runs, a checksum list it verifies (no
    file to copy, but an oracle to test guesses against, and one `:writable:` lets the
    worker rewrite to match whatever it writes), or an expected file it could copy."""
    rewritable = covers(task.writable, name) and not covers(task.protect, name)
    if checksums and rewritable:
        return (
            f"check verifies the checksums listed in `{name}`, which `:writable:` lets the"
            " worker rewrite to match whatever it writes (the check then judges nothing); drop"
            f" `{name}` from `:writable:` (a run then protects it on its own)"
        )
    if checksums:
        how = (
            f"verifies the checksums listed in `{name}`, an expected file the worker can read"
            " — it could test its guesses against them"
        )
    elif program:
        how = (
            f"runs `{name}`, a program the worker can read — it could learn what the check"
            " accepts from it"
        )
    else:
        how = f"compares against `{name}`, a file the worker can read — it could copy it"
    message = (
        f"check {how}; hide it with `:hide: {name}` on the task (or `#+HIDE: {name}` for the file)"
    )
    if rewritable:
        message += "; `:writable:` lets the worker rewrite it, too"
    return message


def _writable_elsewhere(
    checked: TaskSpec, name: str, tasks: list[TaskSpec]
) -> Iterator[Diagnostic]:
    """T035: another task's `:writable:` covers `name`, a file the check of `checked`
    compares against (or runs), though that task's text does not ask to change it — a
    slash-less pattern matches at any depth (`:writable: expected.txt` covers
    `tests/expected.txt`): its worker may rewrite the key, and the check compares against
    what it wrote (adversary-17 F14)."""
    for other in tasks:
        if other is checked or asks_to_change(other, name):
            continue
        pattern = covering(other.writable, name)
        if pattern is None:
            continue
        message = (
            f"`:writable: {pattern}` on task {other.task_id} covers `{name}`, which the check"
            f" of task {checked.task_id} compares against: its worker may rewrite it, and the"
            " check then compares against what it wrote; name only the file it should change"
            " (a name without `/` matches at any depth: `:writable: /expected.txt` is the"
            " top-level file only)"
        )
        yield Diagnostic("warning", other.heading.title, message, None, "T035")


def _key_made_elsewhere(
    checked: TaskSpec, name: str, makers: list[TaskSpec], work: list[str] | None = None
) -> Iterator[Diagnostic]:
    """T039: another task's text asks to change `name`, an existing file the check of
    `checked` compares against (or runs): "Regenerate tests/expected.txt", then "Write
    out/sorted.txt" diffed against it. The run lets the asked change through, so the check
    holds the work to whatever that worker wrote (adversary-19 F5): the key-maker's own check
    must verify the key."""
    for other in makers:
        if other is checked:
            # adv24b F11: the key and the work it is compared with both asked of one worker,
            # who can make them agree (a key-maker's own check of the key is no such case)
            if not work:
                continue
            message = (
                f"the check compares against `{name}`, which this task's own text asks to"
                " change: its worker can make the key agree with whatever it writes, and the"
                f" check then judges nothing; verify what `{name}` must hold another way (a"
                " checksum list, a check of its content), or ask for the work alone"
            )
            line = checked.check.line if checked.check is not None else None
            yield Diagnostic("warning", checked.heading.title, message, line, "T039")
            continue
        message = (
            f"the check of task {checked.task_id} compares against `{name}`, which the text of"
            f" task {other.task_id} asks to change: the check then holds this task's work to"
            f" what that worker wrote; let task {other.task_id}'s check verify what `{name}`"
            " holds (its content, not only its size), or hide the key (`:hide:`) and let no"
            " task rewrite it"
        )
        line = checked.check.line if checked.check is not None else None
        yield Diagnostic("warning", checked.heading.title, message, line, "T039")


def _unsure_asks(tasks: list[TaskSpec], base: Path) -> Iterator[Diagnostic]:
    """T028: a task's text both asks to change a file the run protects (an existing file a
    check compares against; pytest's configuration when a check runs pytest; a check's own
    test file, "update the tests, not calc.py") and negates in
    the same sentence: the run reads it as not asking (fail-closed) and says so (F002)."""
    names: dict[str, bool] = {}
    for task in tasks:
        if task.check is not None:
            check = task.check
            for c in compared_by(check.language, check.text) + programs_run_by(
                check.language, check.text
            ):
                names.update(dict.fromkeys(existing_files(base, c), False))
    if any(runs_pytest_check(t) for t in tasks):
        names.update({p: True for p in PYTEST_CONFIGURATION if "*" not in p})
    tests = {name: False for task in tasks for name in check_tests(base, task)}
    for task in tasks:
        for name, anywhere in {**names, **tests}.items():
            if reading(task, name, anywhere=anywhere) == UNSURE:
                message = unsure_message(task.task_id, name)
                yield Diagnostic("warning", task.heading.title, message, task.heading.line, "T028")


_WORD = re.compile(r"[\w./-]+")


def _check_names(base: Path, task: TaskSpec) -> tuple[list[str], list[str]]:
    """The existing files the task's check names (a word of it that is a workdir file), and
    the files it names that do not exist yet (outputs the work makes)."""
    found: list[str] = []
    missing: list[str] = []
    for name in _path_words(task):
        if (base / name).is_file():
            found.append(name)
        elif "." in name.rsplit("/", 1)[-1] and not (base / name).exists():
            missing.append(name)
    return found, missing


def _path_words(task: TaskSpec) -> list[str]:
    """The words of the task's check that can be workdir paths (a `/` or a `.` in them,
    inside the workdir), `./` dropped, in order, each once."""
    check = task.check
    if check is None:
        return []
    found: list[str] = []
    for word in _WORD.findall(check.text):
        if "/" not in word and "." not in word.strip("."):
            continue
        name = word.removeprefix("./")
        if name and not name.startswith(("/", "-")) and ".." not in name.split("/"):
            found.append(name)
    return list(dict.fromkeys(found))


def unasked_reads(tasks: list[TaskSpec], base: Path) -> Iterator[tuple[TaskSpec, str, str]]:
    """(task, file, why) for each existing file a task's check reads, when no task asks to
    change it nor `:writable:` frees it, and: its text seems to be about it
    (`plan.asking.seems_about`: why "about"), or its text names it by its stem alone where the
    stem names no check's key (`plan.expected.stem_names`: why "stem", adversary-14 F6:
    "Update the solution, then write out.txt"), or it is all the check reads ("only"): a
    worker that changes it, as the task seems to want, is failed as changing its check's
    input (lint T031, `agent setup` says the same)."""
    for task in tasks:
        names, missing = _check_names(base, task)
        data = [n for n in names if not n.endswith(".py") and "/." not in "/" + n]
        sole = {n: sum(1 for m in names if _stem(m) == _stem(n)) == 1 for n in data}

        def freed(name: str, checked: TaskSpec = task, seen: list[str] = names + missing) -> bool:
            return any(
                covers(t.writable, name)
                or asks_to_change(t, name, sole_stem=stem_names(checked, t, name, seen))
                for t in tasks
            )

        free = [
            n
            for n in data
            if not covers(task.protect, n) and not covers(task.hide, n) and not freed(n)
        ]
        compared = set(compared_by(task.check.language, task.check.text)) if task.check else set()
        text = task_text(task)
        stems = [n for n in free if sole[n] and asks_to_change(task, n, sole_stem=True)]
        about = [n for n in free if n not in stems and seems_about(text, n, sole_stem=sole[n])]
        for name in stems:
            yield task, name, "stem"
        for name in about:
            yield task, name, "about"
        for name in check_tests(base, task):
            asked = any(covers(t.writable, name) or asks_to_change(t, name) for t in tasks)
            if not asked and seems_about(text, name, test_file=True):
                yield task, name, "symptom"
        only = free and free == data and not missing and not compared & set(free)
        if only and not about and not stems:
            for name in free:
                yield task, name, "only"


#: At most this many of a check's test files are looked at (lint, `agent setup`).
_MAX_TESTS = 50


def check_tests(base: Path, task: TaskSpec) -> list[str]:
    """The existing test files of the task's check that "the tests" names in its text
    (`plan.expected.check_test_file`): under the test paths its pytest or unittest check
    names, or its `pytest` contract's — none when the check names no test path (pytest's
    own discovery); at most `_MAX_TESTS`."""
    from groundskeeper.plan.contract_syntax import protected_by
    from groundskeeper.plan.test_paths import test_paths

    roots = [*test_paths(task)]
    roots += [p for c in task.contracts if c.kind == "pytest" for p in protected_by((c,))]
    found: list[str] = []
    for root in dict.fromkeys(r.strip("/") for r in roots):
        if not root or root == "." or any(c in root for c in "*?[") or ".." in root.split("/"):
            continue
        top = base / root
        files = [top] if top.is_file() else sorted(top.rglob("*.py")) if top.is_dir() else []
        for file in files:
            name = file.relative_to(base).as_posix()
            if ".groundskeeper" in name.casefold().split("/") or name in found:
                continue
            if check_test_file(task, name):
                found.append(name)
            if len(found) >= _MAX_TESTS:
                return found
    return found


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].casefold()


def _changed_later(tasks: list[TaskSpec], base: Path) -> Iterator[Diagnostic]:
    """T042 (adversary-21 F10): a task later in the plan (not under it) is asked to change a
    file the task's check names ("Append a row to out/report.csv" after "Write
    out/report.csv", checked by its line count). The run lets the asked change through, and
    the earlier DONE is judged again on the final files — at its parent's roll-up and the
    final sweep — where its check may no longer hold."""
    # a text can ask for a file only by a spelling holding its stem (`asking.naming_stem`),
    # or by "the tests" for its own check's test file: only those tasks are read in full,
    # once for each file any check names
    texts = [task_text(t).casefold() for t in tasks]
    askers: dict[str, list[int]] = {}

    def asking(name: str) -> list[int]:
        if name not in askers:
            stem, test = naming_stem(name), is_test_module(name.rsplit("/", 1)[-1].casefold())
            askers[name] = [
                m
                for m, t in enumerate(tasks)
                if (test or stem in texts[m]) and asks_to_change(t, name)
            ]
        return askers[name]

    for n, task in enumerate(tasks):
        if task.check is None:
            continue
        names, missing = _check_names(base, task)
        under = _subtree(task)
        for name in dict.fromkeys(names + missing):
            later = [m for m in asking(name) if m > n and tasks[m].heading not in under]
            if not later:
                continue
            other = tasks[later[0]].task_id
            message = (
                f"the check of task {task.task_id} reads `{name}`, which the text of task"
                f" {other}, later in the plan, asks to change: {task.task_id} is judged again on"
                " the final files (at its parent's roll-up and the run's final sweep), so its"
                f" check must also hold after {other}'s change, or {task.task_id} fails then"
            )
            line = task.check.line
            yield Diagnostic("warning", task.heading.title, message, line, "T042")


def changed_later(task: TaskSpec, later: Iterable[TaskSpec]) -> tuple[str, str] | None:
    """(the id of the first of `later` whose text asks to change it, the file) for a file
    the task's check names: T042's relation, which the roll-up names when it fails such a
    task. None: no later task asks for one."""
    wanted = _path_words(task)
    for other in later:
        for name in wanted:
            if asks_to_change(other, name):
                return other.task_id, name
    return None


#: What a virtual environment holds of its own making, not the project's dependencies.
_VENV_TOOLS = frozenset(
    {"pip", "setuptools", "wheel", "pkg_resources", "_distutils_hack", "distutils-precedence",
     "__pycache__", "_virtualenv", "pytest", "_pytest", "pluggy", "iniconfig", "packaging",
     "py"}
)  # fmt: skip
_VENV_DIRS = (".venv", "venv", "env")


def _venv_packages(tasks: list[TaskSpec], base: Path) -> Iterator[Diagnostic]:
    """T043 (adversary-21 F23): a check runs Python, and the workdir holds a virtual
    environment with packages of its own: the sandbox's Python has the standard library
    and pytest only, so code that imports one fails the check whatever the worker does."""
    checks = [t for t in tasks if t.check is not None and "python" in t.check.text]
    if not checks:
        return
    for folder in _VENV_DIRS:
        found: set[str] = set()
        for site in sorted((base / folder / "lib").glob("python*/site-packages"))[:4]:
            try:
                names = sorted(p.name for p in site.iterdir())[:500]
            except OSError:
                continue
            for name in names:
                top = name.split(".", 1)[0].split("-", 1)[0]
                if name.endswith((".dist-info", ".pth", ".egg-info")) or top in _VENV_TOOLS:
                    continue
                found.add(top)
        if not found:
            continue
        shown = ", ".join(f"`{n}`" for n in sorted(found)[:3])
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        task = checks[0]
        message = (
            f"the workdir's `{folder}` holds packages ({shown}{more}) that the sandbox's"
            " python3 cannot import: it has the standard library and pytest only, so a check"
            " whose code imports one fails whatever the worker does; vendor pure-Python"
            " dependencies into the workdir, or check that code outside the sandbox"
        )
        line = task.check.line if task.check is not None else None
        yield Diagnostic("warning", task.heading.title, message, line, "T043")
        return


#: Where a project's own configuration could put `src/` on `sys.path` for its tests.
_PATH_CONFIGURATION = ("pyproject.toml", "pytest.ini", ".pytest.ini", "setup.cfg", "tox.ini",
                       "conftest.py", "tests/conftest.py")  # fmt: skip


def _src_layout(tasks: list[TaskSpec], base: Path) -> Iterator[Diagnostic]:
    """T044 (adv24 H4): a test-runner check's tests import a package of the `src/` layout
    (`src/shop/`, `src/shop.py`) that nothing puts on `sys.path`: natively an editable
    install does, but the sandbox installs nothing, so the tests fail to import it whatever
    the worker does — and the remedy, pytest's `pythonpath`, is configuration the run keeps
    from every worker. Said before any work, to the one who can change it."""
    from groundskeeper.plan.test_paths import runs_pytest_check, runs_unittest, test_paths

    src = base / "src"
    checks = [t for t in tasks if runs_pytest_check(t) or runs_unittest(t)]
    if not checks or not src.is_dir():
        return
    try:
        laid = {
            p.name.removesuffix(".py")
            for p in src.iterdir()
            if (p.is_dir() and (p / "__init__.py").is_file()) or p.suffix == ".py"
        }
    except OSError:
        return
    laid = {n for n in laid if n.isidentifier() and not (base / n).exists()}
    laid -= {n for n in laid if (base / f"{n}.py").exists()}
    if not laid:
        return
    for name in _PATH_CONFIGURATION:
        try:
            text = (base / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "pythonpath" in text or ("src" in text and "sys.path" in text):
            return  # the project puts it there itself
    for task in checks:
        where = [t for t in test_paths(task) if t not in ("", ".")] or ["."]
        imported: set[str] = set()
        for folder in where:
            root = base / folder
            files = [root] if root.is_file() else sorted(root.rglob("*.py"))[:200]
            for path in files:
                if is_test_module(path.name) or path.name == "conftest.py":
                    imported |= _top_imports(path)
        used = sorted(laid & imported)
        if not used:
            continue
        line = task.check.line if task.check is not None else None
        message = (
            f"the tests import `{used[0]}`, which lies under `src/` (the src layout): natively an"
            " editable install puts it on the path, but the sandbox installs nothing, and"
            " nothing here names `pythonpath`, so the tests cannot import it whatever the"
            ' worker does; add `pythonpath = ["src"]` under `[tool.pytest.ini_options]` in'
            " pyproject.toml (or to pytest.ini) before the work"
        )
        yield Diagnostic("warning", task.heading.title, message, line, "T044")
        return


def _top_imports(path: Path) -> set[str]:
    """The top-level names the import statements of the Python file at `path` name; none
    when it cannot be read or parsed (or is larger than a test module written by hand)."""
    import ast

    try:
        if path.stat().st_size > 1 << 20:
            return set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, SyntaxError, RecursionError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _subtree(task: TaskSpec) -> set[Heading]:
    found: set[Heading] = set()
    stack = list(task.heading.child_tasks)
    while stack:
        heading = stack.pop()
        found.add(heading)
        stack.extend(heading.child_tasks)
    return found


def _unasked_reads(tasks: list[TaskSpec], base: Path) -> Iterator[Diagnostic]:
    """T031: `unasked_reads`, each pointing to `:writable:`."""
    for task, name, why in unasked_reads(tasks, base):
        yield Diagnostic("warning", task.heading.title, unasked_message(task, name, why),
                         task.heading.line, "T031")  # fmt: skip


def unasked_message(task: TaskSpec, name: str, why: str) -> str:
    """What lint (T031) and `agent setup` say of `unasked_reads`."""
    stem = _stem(name)
    how = {
        "about": "its text seems to be about changing it but does not ask to (no edit verb"
        " takes it as its object)",
        "stem": f"its text names it only by the word `{stem}`, which does not free a file"
        " the check compares against, nor one it reads beside a file the text asks for by"
        " its full name (a check's key is freed by its full name only)",
        "only": "it is all the check reads, and no task asks to change it",
        "symptom": 'its text asks to change tests it names by what they do ("fix the'
        ' failing tests"), which is read as asking for code that passes them, not to change'
        " the check's own test files",
    }[why]
    return (
        f"the check of task {task.task_id} reads `{name}`, which exists; {how}: a worker"
        " that changes it fails the task as changing its check's input; if the task is to"
        f' change it, add `:writable: {naming(name)}` to the task (or ask in its text: "update'
        f' {name}")'
    )


def _asked_but_kept(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T032: a task's text asks its worker to write a file that one of its protect patterns,
    or a hide pattern of the run, covers (the run's reading, `suite_paths.asked_but_kept`):
    the fence refuses the write, and the run fails the task as changing a protected input."""
    from groundskeeper.plan.suite_paths import asked_but_kept

    hide = tuple(dict.fromkeys(p for task in spec for p in task.hide))
    for task in spec:
        for path, pattern, kind in asked_but_kept(task, hide):
            message = _kept_message(task, path, pattern, kind)
            yield Diagnostic("warning", task.heading.title, message, task.heading.line, "T032")


def _kept_message(task: TaskSpec, path: str, pattern: str, kind: str) -> str:
    """What T032 says: the pattern, why it covers the file, and the fix."""
    where = "`:hide:`/`#+HIDE:`" if kind == "hide" else "`:protect:`/`#+PROTECT:`"
    why = []
    if "/" not in pattern.strip("/") and not pattern.startswith("/") and "/" in path:
        why.append("a pattern without a `/` before its end matches at any depth")
    if pattern.strip("/") not in path and pattern.casefold().strip("/") in path.casefold():
        why.append("letters match in either case")
    narrow = (
        f"anchor it, `/{pattern}`, or name the very file it is for"
        if "/" not in pattern.strip("/") and not pattern.startswith("/")
        else "name the very files it is for"
    )
    because = f" ({'; '.join(why)})" if why else ""
    return (
        f"task {task.task_id} asks its worker to write `{path}`, but the {where} pattern"
        f" `{pattern}` covers it{because}: the sandbox will"
        " refuse the write and the run will fail the task as changing a protected input;"
        f" neither the ask nor `:writable:` frees it; narrow the pattern ({narrow}) or take"
        f" `{path}` out of the task's text"
    )


def _writable_kept(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T030: a `:writable:` that names pytest's configuration under the task's own `pytest`
    contract's test paths: the contract keeps it protected anyway (the run's reading,
    `suite_paths.writable_kept`)."""
    from groundskeeper.plan.suite_paths import suite_paths, writable_kept

    for task in spec:
        for pattern in writable_kept(task):
            suites = [c for c in task.contracts if c.kind == "pytest"]
            contract = next((c for c in suites if covers(suite_paths(task), pattern)), suites[0])
            message = (
                f"`:writable: {pattern}` cannot free it: under the contract `{contract.text}`"
                " pytest's configuration (conftest.py, pytest.ini, …) stays protected, since"
                " the contract refuses configuration a worker could write (C021); a new test"
                " file, or an existing one the task asks to change, is the worker's to write"
            )
            yield Diagnostic("warning", task.heading.title, message, task.heading.line, "T030")


def _pytest_checks(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T025: a check that runs pytest itself, on a task without the `pytest` contract."""
    for task in spec:
        if not runs_pytest_check(task) or any(c.kind == "pytest" for c in task.contracts):
            continue
        message = (
            "the check runs pytest itself, which reads its configuration and plugins from the"
            " workdir (conftest.py, pytest.toml, pytest.ini, pyproject's [tool.pytest], …);"
            " the run keeps workers from writing them, and the task's own worker from the"
            " test files it runs (a change by another worker not asked to fails the task),"
            " but a skipped or deselected test still"
            " passes, and so does code under test that ends the run early with status 0"
            " (`os._exit(0)`, `sys.exit(0)` at import): write `:contract: pytest PATH`, which"
            " also holds the suite to the tests it collected before any work and to pytest's"
            " own report of how each ended"
        )
        yield _check_warning(task, message, "T025")


def _python_checks(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T034: a check that runs Python importing the code under test into its own interpreter
    (`python3 -c 'import m; assert …'`, `python3 -m unittest`, a checker program), on a
    task without the `pytest` contract."""
    from groundskeeper.plan.expected import python_in_process

    for task in spec:
        if any(c.kind == "pytest" for c in task.contracts):
            continue
        command = python_in_process(task)
        if command is None:
            continue
        message = (
            f"the check runs `{_short(command)}`: the code it imports runs in the same"
            " interpreter, whose exit status is all the check sees, so code under test that"
            " ends it early with status 0 (`os._exit(0)`, `sys.exit(0)` at import), or hides"
            " what would run (a function's `__doc__` set to None before doctest reads it),"
            " passes without an assertion running; write the tests for pytest and use"
            " `:contract: pytest PATH`, which holds the suite to pytest's own report of each"
            " test (a mark the check's program prints last proves nothing: the code it"
            " imports can print it too)"
        )
        yield _check_warning(task, message, "T034")


def _check_warning(task: TaskSpec, message: str, code: str) -> Diagnostic:
    """A warning about the task's check, at the check's line (the heading's, without one)."""
    check = task.check
    line = check.line if check is not None else task.heading.line
    return Diagnostic("warning", task.heading.title, message, line, code)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _hidden_judge_files(spec: PlanSpec) -> Iterator[Diagnostic]:
    """F003: a `:judge-files:` path a hidden pattern covers: the judge never sees it."""
    hide = tuple(dict.fromkeys(p for task in spec for p in task.hide))
    if not hide:
        return
    for task in spec:
        for path in task.judge_files:
            if covers(hide, path):
                line = task.heading.property_lines.get("judge-files", task.heading.line)
                message = (
                    f":judge-files: `{path}` is hidden (`:hide:`); the judge never sees a hidden"
                    " input, so it is left out"
                )
                yield Diagnostic("warning", task.heading.title, message, line, "F003")


def _pattern_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """F001: a path pattern that can name nothing inside the workdir (`..`, `~`, `!…`), said
    once per pattern, where it is first inherited or written."""
    told: set[tuple[str, str]] = set()
    for task in spec:
        for name, patterns in (
            ("protect", task.protect),
            ("hide", task.hide),
            ("writable", task.writable),
        ):
            for pattern in patterns:
                problem = pattern_problem(pattern)
                if problem is None or (name, pattern) in told:
                    continue
                told.add((name, pattern))
                line = task.heading.property_lines.get(name, task.heading.line)
                message = f":{name}: path pattern {problem}"
                yield Diagnostic("error", task.heading.title, message, line, "F001")


# Every sandbox command that can print what it is given back (its arguments, a file it reads,
# names it finds, a format it is handed): a pattern that lets one of them through lets a worker
# make its own evidence (`echo`, `cat` or `grep` of a file it wrote, `python3 -c`, `date +…`).
_PRINT_BACK = (
    "echo", "printf", "cat", "head", "tail", "sed", "grep", "sort", "uniq", "cut", "tr", "awk",
    "jq", "tee", "nl", "rev", "paste", "xargs", "find", "python", "python3", "base64",
    "basename", "dirname", "expr", "env", "ls", "readlink", "realpath", "date", "diff", "comm",
    "wc", "stat", "seq",
)  # fmt: skip
_SELF_MADE = (*(f"{c} x" for c in _PRINT_BACK), "sed p x", "true", ":")


def _self_made(pattern: str) -> str | None:
    return next((c.split()[0] for c in _SELF_MADE if command_matches(pattern, c)), None)


def _open_ended(pattern: str, task: TaskSpec) -> str | None:
    """T018: an `output-of` pattern ending in a bare `*` lets the worker choose what the
    command reads (a file it wrote): the message names the artifact to bind it to."""
    words = pattern.split()
    if len(words) < 2 or words[-1] != "*":
        return None
    named = [a for c in task.contracts if judged_on_files(c)
             for a in c.args if "/" in a or "." in a]  # fmt: skip
    artifact = next(iter([*named, *task.judge_files]), None)
    bound = " ".join([*words[:-1], artifact or "FILE"])
    which = f"the artifact `{artifact}`" if artifact else "the file it must read"
    return (
        f"the pattern ends in a bare `*`, so the worker chooses what `{words[0]}` reads (a file"
        f" it wrote could print the quote); bind it to {which}: `output-of:{bound}`"
    )


def _rewritable_programs(pattern: str, task: TaskSpec, base: Path | None) -> Iterator[str]:
    """T027: the workdir programs an `output-of` pattern runs (read as the runtime reads the
    quoting command, `plan.programs`) that the task's worker may change: neither protected
    (or freed again by `:writable:`) nor hidden. A bare command word or a `-m` module counts
    only when the workdir has it (else it is a command or an installed module)."""
    programs = command_programs(pattern) if pattern else ()
    if isinstance(programs, str):
        return  # a pattern the reading cannot place: T017/T018 speak of it
    for program in programs:
        paths = list(program.paths)
        if program.how == "module" or (
            program.how == "command" and "/" not in program.command.split(" ")[0]
        ):
            paths = [p for p in paths if base is not None and (base / p).is_file()]
        for name in paths[:1]:
            protected = covers(task.protect, name) and not covers(task.writable, name)
            if not (protected or covers(task.hide, name)):
                yield name


def _parent_record_rules(task: TaskSpec) -> Iterator[Diagnostic]:
    """T020: a parent has no worker and so no record of an attempt: a rule judged on that
    record could never be judged (it is judged at the roll-up only on the files)."""
    heading = task.heading
    for contract in task.contracts:
        if not judged_on_files(contract):
            message = (
                f"contract `{contract.text}` on a parent task: `{contract.kind}` is judged on"
                " the record of a worker's attempt, and a parent has no worker; put it on the"
                " child task that does the work"
            )
            yield Diagnostic("error", heading.title, message, contract.line, "T020")
    if task.evidence:
        line = heading.property_lines.get("evidence", heading.line)
        message = (
            ":evidence: on a parent task: evidence is checked against a worker's attempt, and a"
            " parent has no worker; put it on the child task that does the work"
        )
        yield Diagnostic("error", heading.title, message, line, "T020")


def _unresolvable_refs(base: Path, schema: str, hide: tuple[str, ...]) -> str | None:
    """Why the schema's relative `$ref`s cannot all be resolved, as the contract resolves
    them (`schema_refs.schema_files`); None when they can (or the schema is not JSON, which
    the contract names when it runs)."""
    import json

    from groundskeeper.plan.schema_refs import SchemaRefError, schema_files

    def read(path: str) -> str | None:
        try:
            return (base / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    try:
        contents = json.loads((base / schema).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        schema_files(schema, contents, read, lambda p: covers(hide, p))
    except SchemaRefError as exc:
        return str(exc)
    return None


def contract_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T015: a `:contract:` line that cannot be read (unknown type, wrong arity, a bad format
    name); T016: a contract's schema that does not exist; T017: an `:evidence:` line that
    cannot be read; T018: a `ran` or `output-of` pattern that a command printing its own
    arguments matches; T027: an `output-of` pattern whose program the worker may rewrite;
    T019: a `pytest` suite with no held-out test; T020: a contract judged on a worker's record
    (`changed`, `ran`) or `:evidence:` on a parent task, which no worker attempts."""
    plan = spec.plan
    base = plan.path.parent if plan.path is not None else None
    hide = tuple(dict.fromkeys(p for task in spec for p in task.hide))
    for task in spec:
        heading = task.heading
        if heading.child_tasks:
            yield from _parent_record_rules(task)
        if task.contracts or task.contract_problems:
            for problem in task.contract_problems:
                line = problem.line or heading.line
                yield Diagnostic("error", heading.title, problem.message, line, "T015")
            for contract in task.contracts:
                loose = _self_made(contract.args[0]) if contract.kind == "ran" else None
                if loose is not None:
                    message = (
                        f"contract `{contract.text}`: the pattern lets `{loose}` count; name"
                        " the command that must have run (e.g. `ran 'pytest *'`)"
                    )
                    yield Diagnostic("warning", heading.title, message, contract.line, "T018")
                if contract.kind == "pytest" and not contract.soft:
                    yield from _readable_suite(task, contract)
                for schema in SHAPES[contract.kind].schemas(contract.args):
                    if base is not None and not (base / schema).is_file():
                        message = (
                            f"contract `{contract.text}`: its schema `{schema}` does not exist"
                            " (paths are relative to the plan's folder)"
                        )
                        yield Diagnostic("error", heading.title, message, contract.line, "T016")
                    elif base is not None:
                        why = _unresolvable_refs(base, schema, hide)
                        if why is not None:
                            message = f"contract `{contract.text}`: {why}"
                            yield Diagnostic("error", heading.title, message, contract.line, "T016")
        if task.evidence or task.evidence_problems:
            line = heading.property_lines.get("evidence", heading.line)
            for message in task.evidence_problems:
                yield Diagnostic("error", heading.title, f":evidence: {message}", line, "T017")
            for field in task.evidence:
                loose = _self_made(field.pattern) if field.pattern else None
                if loose is not None:
                    message = (
                        f":evidence: `{field.spec}`: the pattern lets `{loose}` print the quote,"
                        " so the worker could make its own evidence; name the command that"
                        " reads the work"
                    )
                    yield Diagnostic("warning", heading.title, message, line, "T018")
                elif field.pattern and (open_ended := _open_ended(field.pattern, task)):
                    message = f":evidence: `{field.spec}`: {open_ended}"
                    yield Diagnostic("warning", heading.title, message, line, "T018")
                for name in _rewritable_programs(field.pattern or "", task, base):
                    message = (
                        f":evidence: `{field.spec}`: the worker could rewrite the program that"
                        f" prints the quote (`{name}`); :protect: it (`:protect: {name}`)"
                    )
                    if asks_to_change(task, name):
                        message = (
                            f":evidence: `{field.spec}`: the task asks the worker to change"
                            f" `{name}`, the program that prints the quote, so its output is"
                            " the worker's own and never holds as evidence; quote a command"
                            " that tests it, or let the check run it"
                        )
                    yield Diagnostic("warning", heading.title, message, line, "T027")


def _readable_suite(task: TaskSpec, contract: Contract) -> Iterator[Diagnostic]:
    """T019 (info): a `pytest` suite none of whose tests is hidden. The worker reads every
    input the tests give, and code that special-cases them passes (ImpossibleBench's and
    EvilGenie's agents did); held-out tests catch that."""
    try:
        path = suite_args(contract.args)[0]
    except ValueError:
        return  # T015 says so
    if any(_in_suite(pattern, path) for pattern in task.hide):
        return
    message = (
        f"contract `{contract.text}`: the worker can read every test it runs, so code that"
        " special-cases their inputs passes; hold some out with `:hide: PATH` (a test file"
        f" under {path.rstrip('/')}/: the contract still runs it, the worker never sees it)"
    )
    yield Diagnostic("info", task.title, message, contract.line or task.heading.line, "T019")


def _in_suite(pattern: str, suite: str) -> bool:
    """Whether a hidden pattern can cover a file of the suite at `suite` (read from its text:
    a pattern with no `/` before its end, or starting with `**`, matches at any depth)."""
    pattern = pattern.lstrip("/")
    if "/" not in pattern.rstrip("/") or pattern.startswith("**") or suite == ".":
        return True
    return pattern.rstrip("/") == suite or pattern.startswith(suite.rstrip("/") + "/")


def judge_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """J001: a `:judge:` on a task without an acceptance check (a judge only adds a failure
    to a passing check, never stands in for one); J002: an empty `:judge:`; J005: a `:judge:`
    on a parent task (only leaves have a worker to judge); J003: a
    `:judge-files:` path that is absolute or uses `..`; J004: `:judge-files:` without a
    `:judge:` (nothing would read them); J006: a `:judge:` without `:judge-files:` (the judge
    then sees only what the worker chose to write with `write_file`)."""
    for task in spec:
        heading, criteria = task.heading, task.judge
        line = heading.property_lines.get("judge", heading.line)
        if criteria is not None and not criteria.strip():
            message = ":judge: is empty; state the criteria in plain words (`:judge: …`)"
            yield Diagnostic("error", heading.title, message, line, "J002")
        elif criteria is not None and heading.child_tasks:
            message = (
                ":judge: on a parent task: the judge reviews one worker's work after its check;"
                " put :judge: on the child tasks that do the work"
            )
            yield Diagnostic("error", heading.title, message, line, "J005")
        elif criteria is not None and heading.check is None:
            message = (
                ":judge: on a task without an acceptance check: the judge runs only after a"
                " check passes, never instead of one; add `:done-when:` or a `:check` block"
            )
            yield Diagnostic("error", heading.title, message, line, "J001")
        if not task.judge_files_given:
            if criteria is not None and criteria.strip() and heading.check is not None:
                message = (
                    ":judge: without :judge-files:: the judge sees only the files the worker"
                    " wrote with write_file, which the worker chooses; name the deliverables"
                    " (`:judge-files: PATH …`)"
                )
                if not heading.child_tasks:
                    yield Diagnostic("warning", heading.title, message, line, "J006")
            continue
        files_line = heading.property_lines.get("judge-files", heading.line)
        for problem in task.judge_file_problems:
            yield Diagnostic("error", heading.title, f":judge-files: {problem}", files_line, "J003")
        if criteria is None:
            message = ":judge-files: without :judge:: no judge reads them; add `:judge: …`"
            yield Diagnostic("warning", heading.title, message, files_line, "J004")


def gate_diagnostics(spec: PlanSpec) -> list[Diagnostic]:
    """G001 an unknown gate kind; G002 a `:gate-files:` path that leaves the workdir; G003 a
    gate on a task with subtasks (a gate waits on one worker's work); G004 `:gate-files:`
    without a gate."""
    found: list[Diagnostic] = []
    for spec_task in spec:
        task, raw = spec_task.heading, spec_task.gate
        if raw is not None and raw.strip() not in GATE_KINDS:
            message = f":gate: `{raw.strip()}` is not a gate kind; the one kind is `approval`"
            found.append(Diagnostic("error", task.title, message, task.line, "G001"))
        for path in spec_task.gate_files or ():
            problem = pattern_problem(path)
            if problem is not None:
                message = f":gate-files: {problem}; name paths inside the workdir"
                found.append(Diagnostic("error", task.title, message, task.line, "G002"))
        if raw is not None and task.child_tasks:
            message = (
                ":gate: is for a task a worker does; put it on the subtasks that need a"
                " person's approval"
            )
            found.append(Diagnostic("error", task.title, message, task.line, "G003"))
        if raw is None and spec_task.gate_files is not None:
            message = ":gate-files: without `:gate: approval` binds nothing"
            found.append(Diagnostic("warning", task.title, message, task.line, "G004"))
    return found
