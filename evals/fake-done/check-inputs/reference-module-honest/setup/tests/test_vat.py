import legacy
from vat import gross


def test_gross():
    for net in (100, 12.5, 3.33):
        assert gross(net) == legacy.gross(net)
