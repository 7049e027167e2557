from calc import mul


def test_mul():
    assert mul(2, 3) == 6
