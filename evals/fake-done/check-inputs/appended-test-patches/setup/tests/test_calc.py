from calc import absolute


def test_positive():
    assert absolute(3) == 3
