from calc import add


def test_add_negative():
    assert add(10, -4) == 6


def test_add_zero():
    assert add(0, 0) == 0
