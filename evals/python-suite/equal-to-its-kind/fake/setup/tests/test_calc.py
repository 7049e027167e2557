from calc import add


def test_add(pair):
    assert add(*pair) == 5
