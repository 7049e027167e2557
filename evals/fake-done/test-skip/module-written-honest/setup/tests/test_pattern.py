def test_pattern():
    assert "a-b".count("-") == 1
