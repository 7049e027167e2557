"""The test paths a task's check hands its test runner: a pytest check's (`python3 -m pytest -q
tests a/t.py`) and a unittest check's start directories. Read by the plan's text reading
(which tests a text names) and by the acceptance rules on a check's inputs alike."""

from __future__ import annotations

import functools

from groundskeeper.plan.lint_checks import CHECK_LANGUAGE
from groundskeeper.plan.spec import TaskSpec

__all__ = ["pytest_paths", "runs_pytest_check", "runs_test_runner", "runs_unittest", "test_paths"]


def runs_pytest_check(task: TaskSpec) -> bool:
    """Whether the task's check runs pytest itself (`python3 -m pytest …`)."""
    return task.check is not None and _runs_pytest(task.check.language, task.check.text)


def runs_test_runner(language: str, text: str) -> bool:
    """Whether a check (its language and text) runs a test runner: pytest or unittest
    (`acceptance.check.TEST_RUNNER_TIMEOUT` is its default deadline)."""
    return _runs_pytest(language, text) or (language == CHECK_LANGUAGE and _unittest_runs(text))


@functools.lru_cache(maxsize=4096)
def _runs_pytest(language: str, text: str) -> bool:
    if language != CHECK_LANGUAGE:
        return False
    from groundskeeper.plan.compared import runs_pytest
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        return runs_pytest(parse(text))
    except ShellSyntaxError:
        return False


#: pytest options whose value is the next word (a path after them is no test path).
_PYTEST_VALUED = frozenset(
    {"-k", "-m", "-p", "-c", "-o", "-W", "--rootdir", "--deselect", "--ignore",
     "--ignore-glob", "--confcutdir", "--basetemp", "--junitxml", "--junit-xml", "-r",
     "--maxfail", "--tb", "--durations", "--import-mode", "--override-ini", "--config-file",
     "--log-file", "--log-level", "--capture", "--pyargs", "-n", "--dist"}
)  # fmt: skip


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


def test_paths(task: TaskSpec) -> tuple[str, ...]:
    """The test paths of the task's check: a pytest check's (`pytest_paths`) and a unittest
    check's start directories (`python3 -m unittest discover -s tests`, or `discover tests`;
    `python3 -m unittest tests/test_calc.py` or `tests.test_calc`: that file)."""
    check = task.check
    if check is None:
        return ()
    return tuple(dict.fromkeys((*pytest_paths(task), *_unittest_paths(check.text))))


def runs_unittest(task: TaskSpec) -> bool:
    """Whether the task's check runs `python3 -m unittest`."""
    check = task.check
    return check is not None and _unittest_runs(check.text)


@functools.lru_cache(maxsize=1024)
def _unittest_runs(text: str) -> bool:
    return any(True for _ in _unittest_commands(text))


def _unittest_commands(text: str) -> list[list[str | None]]:
    from groundskeeper.sandbox import ShellSyntaxError, parse
    from groundskeeper.sandbox.syntax import simple_commands

    try:
        script = parse(text)
    except ShellSyntaxError:
        return []
    found: list[list[str | None]] = []
    for command in simple_commands(script):
        words = [w.literal() for w in command.words]
        if len(words) < 3 or words[0] not in ("python3", "python"):
            continue
        for at in range(1, len(words) - 1):
            if words[at] == "-m" and words[at + 1] == "unittest":
                found.append(words[at + 2 :])
                break
            if words[at] == "-munittest":
                found.append(words[at + 1 :])
                break
            word = words[at]
            if word is None or word == "-c" or not word.startswith("-"):
                break
    return found


@functools.lru_cache(maxsize=1024)
def _unittest_paths(text: str) -> tuple[str, ...]:
    from groundskeeper.path_patterns import normal_path

    found: list[str] = []
    for rest in _unittest_commands(text):
        if rest and rest[0] == "discover":
            start = "."
            positional = 0
            skip: str | None = None
            for word in rest[1:]:
                if word is None:
                    skip = None
                    continue
                if skip is not None:
                    if skip in ("-s", "--start-directory"):
                        start = word
                    skip = None
                    continue
                if word in ("-s", "--start-directory", "-t", "--top-level-directory", "-p",
                            "--pattern", "-k"):  # fmt: skip
                    skip = word
                elif word.startswith("-"):
                    continue
                else:
                    positional += 1
                    if positional == 1:
                        start = word
            found.append(normal_path(start) or ".")
            continue
        for word in rest:
            if word is None or word.startswith("-"):
                continue
            if not word.endswith(".py") and "/" not in word:
                word = word.replace(".", "/") + ".py"
            path = normal_path(word)
            if path is not None:
                found.append(path)
    return tuple(dict.fromkeys(found))
