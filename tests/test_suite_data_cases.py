"""Adversary-20 F8: under `:contract: pytest tests`, a case added to an existing parametrized
test's data, in a module under the suite's paths the text asks to change ("Add the case
(0, 4, 4) to CASES in tests/expected_values.py"), is the asked work, not a new test (C022).
Without such a module freed, or for a test function the red-first run never saw, a new id
stays new. The eval pair `protected-input/suite-data-case-*` runs it through the CLI."""

from __future__ import annotations

from groundskeeper.acceptance.contracts import _new_cases
from groundskeeper.acceptance.suite import Baseline

BEFORE = Baseline(
    collected=(
        "tests/test_calc.py::test_add[1-2-3]",
        "tests/test_calc.py::test_add[2-3-5]",
        "tests/test_calc.py::test_plain",
    )
)
NOW = (
    *BEFORE.collected,
    "tests/test_calc.py::test_add[0-4-4]",  # a new case of a parametrized test seen before
    "tests/test_calc.py::test_sub[1-1-0]",  # a parametrized test never seen
    "tests/test_calc.py::test_new",  # a new function
    "tests/test_other.py::test_add[0-4-4]",  # the same name in another file
)


def test_no_data_module_freed_makes_no_case() -> None:
    assert _new_cases(BEFORE, NOW, ()) == frozenset()
    assert _new_cases(BEFORE, NOW, ("tests/test_calc.py", "tests/check_test.py")) == frozenset()
    assert _new_cases(None, NOW, ("tests/expected_values.py",)) == frozenset()


def test_a_freed_data_file_makes_only_new_cases_of_a_test_seen_before() -> None:
    for data in ("tests/expected_values.py", "tests/cases.json"):
        made = _new_cases(BEFORE, NOW, ("tests/test_calc.py", data))
        assert made == frozenset({"tests/test_calc.py::test_add[0-4-4]"})
