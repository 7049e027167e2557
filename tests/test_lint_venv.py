"""Adversary-21 F23: a project whose code imports a package from its own `.venv` always
FAILED, the check's status the only reason given. Lint says so before the run (T043)."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from tests.test_cli_run import HEAD, task


def _t043(root: Path, check: str = "python3 -m pytest -q tests") -> list[str]:
    plan = root / "plan.org"
    plan.write_text(HEAD + task("Fix the titles", "t", check))
    return [d.message for d in validate(load_plan(plan)) if d.code == "T043"]


def _site(root: Path, folder: str = ".venv") -> Path:
    site = root / folder / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    for tool in ("pip", "setuptools", "_distutils_hack", "pip-24.0.dist-info"):
        (site / tool).mkdir()
    (site / "distutils-precedence.pth").write_text("")
    return site


def test_a_venv_with_a_package_of_its_own_is_named(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "slugkit").mkdir()
    (site / "slugkit-1.0.dist-info").mkdir()
    (message,) = _t043(tmp_path)
    assert message.startswith(
        "the workdir's `.venv` holds packages (`slugkit`) that the sandbox's python3 cannot import"
    ), message


def test_a_venv_of_tools_only_or_a_check_without_python_is_not(tmp_path: Path) -> None:
    site = _site(tmp_path, "venv")
    assert _t043(tmp_path) == []
    (site / "slugkit.py").write_text("")
    assert len(_t043(tmp_path)) == 1
    assert _t043(tmp_path, "grep -qx ok out.txt") == []
