import pytest

from money import Money, parse


@pytest.mark.parametrize(("text", "cents"), [("$1.50", 150), ("$2", 200), ("$0.05", 5)])
def test_parse(text, cents):
    assert parse(text) == Money(cents)
