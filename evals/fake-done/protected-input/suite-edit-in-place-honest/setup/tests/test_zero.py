from calc import add


def test_zero():
    assert add(0, 0) == 0
