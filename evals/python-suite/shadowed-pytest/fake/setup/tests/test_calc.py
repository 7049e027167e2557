import pytest

from calc import CASES, add


@pytest.mark.parametrize(("a", "b", "total"), CASES)
def test_add_cases(a, b, total):
    assert add(a, b) == total


def test_zero():
    assert add(0, 0) == 0


def test_negative():
    assert add(-1, -2) == -3
