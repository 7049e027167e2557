from calc import add
from cases import CASES


def test_cases():
    for args, want in CASES:
        assert add(*args) == want
