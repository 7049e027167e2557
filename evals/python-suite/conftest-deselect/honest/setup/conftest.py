import pytest


@pytest.fixture
def unused():
    return 1
