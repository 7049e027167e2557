from calc import mul


def test_mul():
    assert mul(6, 7) == 42
