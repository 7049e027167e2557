"""Which edits of a test module that was there are tests appended, and nothing more
(`acceptance.appended_tests`, adversary-24 H5 and F8): every way a worker could run code at
collection, rebind a test or drop one is no append; a plain test function after the others is."""

from __future__ import annotations

import pytest

from groundskeeper.acceptance.appended_tests import appended, statement_digests

BEFORE = """\
import pytest

from calc import absolute


def test_positive():
    assert absolute(3) == 3


def test_zero():
    assert absolute(0) == 0
"""

DIGESTS = statement_digests(BEFORE) or []


# -- edits that are not appended tests: each is refused, the file an input like any -----------

NOT_APPENDED = {
    "nothing appended": "",
    "module-level code": "import calc\ncalc.absolute = abs\n",
    "a default value": "def test_neg(a=__import__('calc')):\n    pass\n",
    "a keyword default": "def test_neg(*, a=print('x')):\n    pass\n",
    "an annotation": "def test_neg(a: print('x')):\n    pass\n",
    "a return annotation": "def test_neg() -> print('x'):\n    pass\n",
    "a decorator that is a call of anything": "@print\ndef test_neg():\n    pass\n",
    "a mark with a computed argument": (
        "@pytest.mark.parametrize('v', __import__('calc').CASES)\ndef test_neg(v):\n    pass\n"
    ),
    "a mark with a starred argument": (
        "@pytest.mark.parametrize(*['v', [1]])\ndef test_neg(v):\n    pass\n"
    ),
    "a mark with keywords unpacked": "@pytest.mark.skipif(**{})\ndef test_neg():\n    pass\n",
    "a mark of another name": "@other.mark.skip\ndef test_neg():\n    pass\n",
    "a test rebinding one that was there": "def test_zero():\n    pass\n",
    "a test rebinding an import": "def absolute(x):\n    return abs(x)\n",
    "the same new name twice": "def test_neg():\n    pass\ndef test_neg():\n    pass\n",
    "a class": "class TestNeg:\n    def test_one(self):\n        pass\n",
    "a function not named as a test": "def helper():\n    pass\n",
    "a test under an if": "if True:\n    def test_neg():\n        pass\n",
    "an assignment after the test": "def test_neg():\n    pass\nCASES = []\n",
}


@pytest.mark.parametrize("tail", NOT_APPENDED.values(), ids=NOT_APPENDED.keys())
def test_an_edit_that_runs_code_or_rebinds_is_no_append(tail: str) -> None:
    assert appended(DIGESTS, BEFORE + "\n" + tail) is None


def test_a_statement_that_was_there_changed_is_no_append() -> None:
    changed = BEFORE.replace("absolute(0) == 0", "True")
    assert appended(DIGESTS, changed + "\ndef test_neg():\n    pass\n") is None


def test_a_statement_that_was_there_removed_is_no_append() -> None:
    dropped = BEFORE.replace("def test_zero():\n    assert absolute(0) == 0\n", "")
    assert appended(DIGESTS, dropped + "\ndef test_neg():\n    pass\n") is None


def test_statements_that_were_there_reordered_are_no_append() -> None:
    reordered = BEFORE.replace("import pytest\n\nfrom calc import absolute\n", "")
    reordered = "from calc import absolute\nimport pytest\n" + reordered
    assert appended(DIGESTS, reordered + "\ndef test_neg():\n    pass\n") is None


def test_a_star_import_before_leaves_what_is_bound_unknown() -> None:
    before = "from calc import *\n\ndef test_one():\n    assert absolute(1) == 1\n"
    digests = statement_digests(before) or []
    assert appended(digests, before + "\ndef test_neg():\n    pass\n") is None


def test_a_module_that_does_not_parse_is_no_append() -> None:
    assert appended(DIGESTS, BEFORE + "\ndef test_neg(:\n") is None
    assert appended([], "def test_neg():\n    pass\n") is None


# -- appended tests: the names of the new functions --------------------------------------------


def test_plain_tests_appended_are_named() -> None:
    tail = (
        "\n\ndef test_negative():\n    assert absolute(-3) == 3\n"
        "\n\nasync def test_async():\n    pass\n"
    )
    assert appended(DIGESTS, BEFORE + tail) == ("test_negative", "test_async")


def test_marks_with_literal_arguments_and_fixtures_as_parameters_are_an_append() -> None:
    tail = (
        "\n@pytest.mark.parametrize('v, want', [(-3, 3), (-1, 1)])\n"
        "@pytest.mark.skipif(False, reason='never')\n"
        "@pytest.mark.slow\n"
        "def test_negatives(v, want, tmp_path):\n    assert absolute(v) == want\n"
    )
    assert appended(DIGESTS, BEFORE + tail) == ("test_negatives",)


def test_formatting_and_comments_of_what_was_there_do_not_count() -> None:
    reformatted = BEFORE.replace("assert absolute(3) == 3", "assert absolute( 3 ) == 3  # one")
    assert appended(DIGESTS, reformatted + "\ndef test_neg():\n    pass\n") == ("test_neg",)


PLAIN = "from calc import absolute\n\n\ndef test_positive():\n    assert absolute(3) == 3\n"
PARAMETRIZED = (
    "\n\n@pytest.mark.parametrize('v', [-1, -2])\ndef test_negative(v):\n"
    "    assert absolute(v) == -v\n"
)


def test_an_import_of_pytest_put_first_for_the_new_marks_is_an_append() -> None:
    """adversary-24d F4: a parametrized test needs `import pytest` at the module's top."""
    digests = statement_digests(PLAIN) or []
    assert appended(digests, "import pytest\n" + PLAIN + PARAMETRIZED) == ("test_negative",)


@pytest.mark.parametrize(
    "head",
    [
        "import pytest\nimport pytest\n",  # twice
        "import pytest as absolute\n",  # bound as another name
        "import os\n",  # any other import
        "from pytest import mark\n",
    ],
)
def test_other_imports_put_first_are_no_append(head: str) -> None:
    digests = statement_digests(PLAIN) or []
    assert appended(digests, head + PLAIN + PARAMETRIZED) is None


def test_an_import_of_pytest_rebinding_a_name_of_the_module_is_no_append() -> None:
    before = "pytest = None\n" + PLAIN
    digests = statement_digests(before) or []
    assert appended(digests, "import pytest\n" + before + PARAMETRIZED) is None


# adversary-28 H2: the import of the module under test widened for the new test

TWO = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    "\n\ndef test_sum():\n    assert sum([add(1, 1)]) == 2\n"
)
MUL_TEST = "\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


@pytest.mark.parametrize(
    "head",
    [
        "from calc import add, mul\n",
        "from calc import mul, add\n",
        "from calc import (\n    add,\n    mul,\n)\n",
    ],
)
def test_an_import_that_was_there_widened_for_the_new_test_is_an_append(head: str) -> None:
    before = statement_digests(TWO) or []
    source = TWO.replace("from calc import add\n", head) + MUL_TEST
    assert appended(before, source) == ("test_mul",)


@pytest.mark.parametrize(
    "head",
    [
        "from calc import add, mul as times\n",  # aliased
        "from calc import add, sum\n",  # shadows a builtin the tests that were there call
        "from calc import add, test_add\n",  # rebinds a test of the module
        "from calc import mul\n",  # a name taken away
        "from calc2 import add, mul\n",  # another module
        "from calc import add, *\n",  # not Python, but never an append
    ],
)
def test_an_import_widened_to_rebind_or_shadow_is_no_append(head: str) -> None:
    before = statement_digests(TWO) or []
    source = TWO.replace("from calc import add\n", head) + MUL_TEST
    assert appended(before, source) is None


def test_an_import_widened_without_a_test_appended_is_no_append() -> None:
    before = statement_digests(TWO) or []
    assert appended(before, TWO.replace("import add", "import add, mul")) is None
