import pytest

from leap import is_leap


@pytest.mark.parametrize(("year", "leap"), [(2100, False), (1800, False), (2400, True), (1996, True)])
def test_is_leap_held_out(year, leap):
    assert is_leap(year) is leap
