"""A plain pytest check's pass with test modules made during the work (adversary-19 F14).

A test module runs at collection, before any test: one a task asks for could rebind the code
under test (`calc.add = lambda a, b: a + b`) so that the tests that were there pass with no
fix. So a passing pytest check that read test modules made during the work, beside tests
that were there before it, runs once more without them (`PYTEST_ADDOPTS=--ignore=…`): the
tests that were there must pass on their own, as a `pytest` contract's red-first tests must.
A run knows which worker made each file (`supervisor.run_paths`); a session knows what its
sealed snapshot did not hold (`agents.gate`). Both decide here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from groundskeeper.acceptance.check import CheckResult, SealedCheck, sha256_text
from groundskeeper.fastclass import replace
from groundskeeper.plan.spec import TaskSpec
from groundskeeper.plan.test_paths import pytest_paths, runs_pytest_check
from groundskeeper.pytest_files import named_as_test
from groundskeeper.sandbox.confine import GUEST_ROOT

__all__ = ["CODE", "rerun_without", "test_modules_read", "without_added"]

#: The failure code of such a pass that does not hold without the added tests.
CODE = "added_tests_decide"


def test_modules_read(task: TaskSpec, read: Iterable[str] | None) -> list[str]:
    """The test modules (`test_*.py`, `*_test.py`) the task's passing pytest check read under
    the test paths it names (anywhere, when it names none); empty for any other check."""
    if read is None or not runs_pytest_check(task):
        return []
    paths = [p for p in pytest_paths(task) if p != "."]
    return [p for p in read if p.endswith(".py") and named_as_test(p)
            and (not paths or any(_under_path(p, t) for t in paths))]  # fmt: skip


def without_added(
    check: SealedCheck,
    added: list[str],
    made: str,
    result: CheckResult,
    rerun: Callable[[SealedCheck], CheckResult],
) -> CheckResult:
    """`result` (a pass) when the check passes again without the test modules `added` (a
    worker's, or made since a seal: `made` says which, as the reason's clause), else a
    failure (`added_tests_decide`) naming them and why the tests that were there fail."""
    ignore = " ".join(f"--ignore={GUEST_ROOT}/{p}" for p in added)
    return rerun_without(
        check, f"{', '.join(added)}, {made}", "PYTEST_ADDOPTS", f'"{ignore}"', result, rerun
    )


def rerun_without(
    check: SealedCheck,
    left_out: str,
    variable: str,
    value: str,
    result: CheckResult,
    rerun: Callable[[SealedCheck], CheckResult],
) -> CheckResult:
    """`result` (a pass) when the check passes again with `variable` exported as `value`
    (a shell word), which leaves out what the worker added (`left_out`, said in the
    reason), else a failure (`added_tests_decide`) naming it and why the tests that were
    there fail; a failure too when the check sets `variable` itself (ours would be replaced:
    the run cannot be told)."""
    said = f"without {left_out}, the tests that were"
    if variable in check.text:
        return _failed(check, f"{said} there cannot be run: the check sets {variable}")
    again = rerun(replace(check, text=f"export {variable}={value}\n{check.text}"))
    if again.passed:
        return result
    return _failed(check, f"{said} there fail: {again.reason}", again.output)


def _failed(check: SealedCheck, reason: str, output: str = "") -> CheckResult:
    return CheckResult("FAIL", CODE, reason, output, check.sha256, sha256_text(output), 0, None)


def _under_path(path: str, test_path: str) -> bool:
    return path == test_path or path.startswith(test_path.rstrip("/") + "/")
