import pytest


@pytest.fixture
def pair():
    return (2, 3)


def pytest_report_header(config):
    return "calc: the project's own hook"
