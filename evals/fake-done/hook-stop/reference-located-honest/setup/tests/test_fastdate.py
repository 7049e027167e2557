import fastdate
import legacy


def test_parse():
    for text in ("2024-03-01", "1999-12-31", "2000-01-02"):
        assert fastdate.parse(text) == legacy.parse(text)
