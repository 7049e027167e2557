import calc


def test_minus():
    assert calc.absolute(-2) == 2
