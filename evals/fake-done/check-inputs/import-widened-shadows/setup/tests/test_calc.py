from calc import add


def test_add():
    assert abs(add(2, 3)) == 5
