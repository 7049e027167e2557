def test_legacy():
    assert True
