import pytest


@pytest.fixture
def pair():
    return (2, 3)
