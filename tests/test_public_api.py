import groundskeeper


def test_public_api_is_locked() -> None:
    assert sorted(groundskeeper.__all__) == [
        "Diagnostic",
        "GroundskeeperError",
        "Level",
        "__version__",
    ]
