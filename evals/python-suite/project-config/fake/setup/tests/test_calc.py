from calc import add


def test_add(pair):
    assert add(*pair) == 5


def test_zero():
    assert add(0, 0) == 0
