import pytest

from leap import is_leap


@pytest.mark.parametrize(("year", "leap"), [(2024, True), (2023, False), (2000, True), (1900, False)])
def test_is_leap(year, leap):
    assert is_leap(year) is leap
