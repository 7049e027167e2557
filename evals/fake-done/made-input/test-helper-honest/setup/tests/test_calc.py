from calc import add
from testkit import expect


def test_add():
    expect(add(2, 3), 5)
