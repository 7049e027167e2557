"""CPython's warm start: `python3 [-E -s] -m pytest …` resumed from set-up's memory image is
the same command as a cold start, only sooner. Failure paths first: starts the image cannot
stand for are cold, an image that does not resume falls back to a cold start, a resumed run
keeps its deadline, nothing of one run reaches the next, and the request is gone before
pytest runs; then, against a cold start of the same command (the image hidden), the same
output, status, traceback, `sys.argv`, `sys.path[0]`, directory and environment.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import wasmtime

from groundskeeper.sandbox import ShellResult, cpython, cpython_warm, hostcall, shell, wasi

PROBE = """\
import os, sys

def test_probe():
    print(sys.argv[1:], sys.orig_argv, sys.path[0], os.getcwd(), __name__)
    print(sorted(k for k in os.environ if k != "PYTEST_ADDOPTS"), os.environ["PYTEST_ADDOPTS"])
    print(os.path.exists("/tmp/.gk-warm"), "gk_warm" in vars(sys.modules["__main__"]))
"""
LEAK = """\
import os, pytest, random

def test_leak():
    print(hasattr(pytest, "leak"), os.environ.get("LEAK"), random.random())
    pytest.leak = 1
    os.environ["LEAK"] = "yes"
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "tests").mkdir(parents=True)
    (root / "probe").mkdir()
    (root / "probe" / "test_probe.py").write_text(PROBE)
    (root / "probe" / "test_leak.py").write_text(LEAK)
    (root / "calc.py").write_text("def absolute(x):\n    return x\n")
    (root / "tests" / "test_calc.py").write_text(
        "from calc import absolute\n\n\ndef test_positive():\n    assert absolute(3) == 3\n\n\n"
        "def test_negative():\n    assert absolute(-3) == 3\n"
    )
    return root


def sh(work: Path, cmdline: str, timeout: float = 30.0) -> ShellResult:
    return shell.run_cmdline(cmdline, workdir=work, read_only=False, timeout=timeout, env=None)


def cold(work: Path, cmdline: str, monkeypatch: pytest.MonkeyPatch) -> ShellResult:
    """The same command started cold: no image to resume."""
    with monkeypatch.context() as patched:
        patched.setattr(cpython_warm, "read_image", lambda path: None)
        return sh(work, cmdline)


@pytest.fixture
def resumes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each python3 stage from here on resumed from an image (True) or started cold
    (False)."""
    from groundskeeper.sandbox.cpython_setup import ensure

    ensure()  # set-up's own stages (a site directory rebuilt, its images) are not counted
    seen: list[bool] = []
    real = wasi.run_stage

    def run_stage(spec: wasi.StageSpec, *args: object, **kw: object) -> wasi.StageOutcome:
        outcome = real(spec, *args, **kw)  # type: ignore[arg-type]
        if spec.argv[0] in ("python3", "python"):
            seen.append(spec.rewind is not None and spec.rewind.resumed)
        return outcome

    monkeypatch.setattr(wasi, "run_stage", run_stage)
    return seen


# ---- which starts are warm ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "options"),
    [
        (["python3", "-c", "pass"], [], None),
        (["python3", "probe.py"], [], None),
        (["python3", "-mpytest"], [], None),
        (["python3", "-I", "-m", "pytest"], [], None),
        (["python3", "-E", "-m", "pytest"], [], None),
        (["python3", "-m"], [], None),
        (["python3", "-m", "unittest"], [], None),
        (["python3", "-m", "calc"], [], None),
        (["python3", "-m", "pytest.x"], [], None),
        (["python3", "-m", "pytest"], [("PYTHONPATH", "x")], None),
        (["python3", "-m", "pytest"], [("PYTHONHASHSEED", "0")], None),
        (["python3", "-m", "pytest"], [("LANG", "C.UTF-8")], None),
        (["python3", "-m", "pytest"], [("LC_ALL", "C")], None),
        (["python3", "-m", "pytest"], [("TZ", "UTC")], None),
        (["python3", "-E", "-s", "-m", "pytest"], [("LC_CTYPE", "C")], None),
        (["python3", "-m", "pytest", "-q"], [("HOME", "/x"), ("TMPDIR", "/tmp")], ()),
        (["python", "-m", "pytest"], [], ()),
        (["python3", "-E", "-s", "-m", "pytest"], [("PYTHONPATH", "x")], ("-E", "-s")),
    ],
)
def test_only_a_start_an_image_stands_for_is_warm(
    argv: list[str], env: list[tuple[str, str]], options: tuple[str, ...] | None
) -> None:
    assert cpython_warm.wanted(argv, env) == options


def test_an_image_that_does_not_resume_falls_back_to_a_cold_start(
    work: Path, monkeypatch: pytest.MonkeyPatch, resumes: list[bool]
) -> None:
    good = cpython_warm.read_image(cpython.image_path())
    assert good is not None
    broken = hostcall.Image(bytes(len(good.memory)), good.stack_pointer, good.data)
    monkeypatch.setattr(cpython_warm, "read_image", lambda path: broken)
    result = sh(work, "python3 -m pytest -q -s probe/test_probe.py")
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout.splitlines()[0].startswith("['-q', '-s', 'probe/test_probe.py']")
    assert resumes == [False, False]  # the broken resume, then the cold start


def test_an_image_larger_than_its_module_allows_is_refused_and_started_cold(
    work: Path, monkeypatch: pytest.MonkeyPatch, resumes: list[bool]
) -> None:
    good = cpython_warm.read_image(cpython.image_path())
    assert good is not None
    small = hostcall.Image(good.memory[: hostcall.PAGE], good.stack_pointer, good.data)
    monkeypatch.setattr(cpython_warm, "read_image", lambda path: small)
    result = sh(work, "python3 -m pytest -q probe/test_probe.py")
    assert (result.status, result.stderr) == (0, "")
    assert resumes == [False, False]


def test_a_warm_run_keeps_its_deadline(work: Path, resumes: list[bool]) -> None:
    (work / "probe" / "test_spin.py").write_text(
        "def test_spin():\n    while True:\n        pass\n"
    )
    result = sh(work, "python3 -m pytest -q probe/test_spin.py; echo after", timeout=1.0)
    assert (result.status, result.fault, result.stdout) == (124, "deadline", "")
    assert resumes == [True]


def test_nothing_of_one_warm_run_reaches_the_next(work: Path, resumes: list[bool]) -> None:
    command = "python3 -m pytest -q -s probe/test_leak.py"
    one, two = sh(work, command).stdout.split()[:3], sh(work, command).stdout.split()[:3]
    assert one[:2] == two[:2] == ["False", "None"]
    assert one[2] != two[2]  # the random state is not the image's
    assert resumes == [True, True]


def test_the_request_is_gone_and_the_image_s_own_names_are_not_in_main(
    work: Path, resumes: list[bool]
) -> None:
    result = sh(work, "python3 -m pytest -q -s probe/test_probe.py")
    assert result.stdout.splitlines()[2] == "False False"
    assert resumes == [True]


def test_gk_warm_outside_a_warm_start_says_so(work: Path, resumes: list[bool]) -> None:
    result = sh(work, "python3 -c \"__import__('gk_warm').ready()\"")
    assert result.status == 1
    assert result.stderr == "gk_warm: not a warm start (there is no request to run)\n"
    assert resumes == [False]


# ---- the same command as a cold start -------------------------------------------------------


@pytest.mark.parametrize(
    "cmdline",
    [
        "python3 -m pytest -q -s probe/test_probe.py -k 'probe or x'",
        "CHECK=1 PYTEST_ADDOPTS=-v python3 -m pytest -s probe/test_probe.py",
        "cd probe && python3 -m pytest -q -s test_probe.py",
        "python3 -E -s -m pytest -q -s probe/test_probe.py",
        "python3 -m pytest -q tests",
        "python3 -E -s -m pytest -q -p no:cacheprovider tests/test_calc.py::test_positive",
        "python3 -m pytest --version",
        "python3 -m pytest -q nosuchdir",
        "python3 -m pytest -q -p nosuchplugin tests",
        "printf 'raise ValueError(1)' > boom.py && PYTEST_PLUGINS=boom python3 -m pytest tests",
        "printf 'import sys\\nsys.exit(3)\\n' > conftest.py && python3 -m pytest -q tests",
    ],
)
def test_a_warm_start_is_the_same_command_as_a_cold_one(
    work: Path, monkeypatch: pytest.MonkeyPatch, resumes: list[bool], cmdline: str
) -> None:
    warm = sh(work, cmdline)
    assert resumes == [True]
    started_cold = cold(work, cmdline, monkeypatch)
    assert resumes == [True, False]
    assert (warm.status, timeless(warm.stdout), warm.stderr) == (
        started_cold.status,
        timeless(started_cold.stdout),
        started_cold.stderr,
    )
    assert warm.status in (0, 1, 3, 4)


def timeless(output: str) -> str:
    """pytest's summary without the seconds it took (which differ between any two runs)."""
    return re.sub(r" in \d+\.\d+s", " in …s", output)


def test_a_failing_suite_fails_warm_as_it_does_cold(work: Path, resumes: list[bool]) -> None:
    warm = sh(work, "python3 -m pytest -q tests")
    assert warm.status == 1
    assert "FAILED tests/test_calc.py::test_negative - assert -3 == 3" in warm.stdout
    assert "1 failed, 1 passed" in warm.stdout
    assert resumes == [True]


def test_a_passing_suite_passes_warm(work: Path, resumes: list[bool]) -> None:
    (work / "calc.py").write_text("def absolute(x):\n    return abs(x)\n")
    warm = sh(work, "python3 -m pytest -q tests")
    assert warm.status == 0 and "2 passed" in warm.stdout
    assert resumes == [True]


# ---- the transform ----------------------------------------------------------------------------


def test_the_transform_refuses_a_module_without_the_frames() -> None:
    tiny = wasmtime.wat2wasm('(module (memory (export "memory") 1) (func (export "_start")))')
    with pytest.raises(ValueError, match="lacks the frames"):
        cpython_warm.transform(tiny)


def test_the_images_were_taken_for_each_option_set() -> None:
    paths = [cpython.image_path(options) for options in cpython_warm.IMAGE_OPTIONS]
    assert len(set(paths)) == 2
    for path in paths:
        image = cpython_warm.read_image(path)
        assert image is not None
        assert len(image.memory) % hostcall.PAGE == 0
        assert image.data == len(image.memory) - hostcall.UNWIND_PAGES * hostcall.PAGE


def test_an_image_anyone_else_could_change_is_not_read(tmp_path: Path) -> None:
    image = cpython_warm.read_image(cpython.image_path())
    assert image is not None
    copy = tmp_path / "python-x.image"
    cpython_warm.write_image(copy, image)
    assert cpython_warm.read_image(copy) == image
    copy.chmod(0o666)
    assert cpython_warm.read_image(copy) is None
    link = tmp_path / "link.image"
    link.symlink_to(cpython.image_path())
    assert cpython_warm.read_image(link) is None
    (tmp_path / "bad.image").write_bytes(b"GKIMAGE1\n{}\n")
    assert cpython_warm.read_image(tmp_path / "bad.image") is None
