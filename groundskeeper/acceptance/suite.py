"""A project's own test suite as acceptance (the `pytest` contract): the suite run by pytest
in the sandbox under a configuration the worker cannot influence, and its record compared
with the one taken before any worker ran.

It owns which files may configure a suite (each must be a protected input, or the run is
refused), running the suite (`cpython.run_alone`: CPython in the sandbox, read-only, behind
the run's fences, its record written by our `gk_suite` plugin into the run's private /tmp),
the red-first `Baseline`, and the judgement: every test passed, the collected ids are the
baseline's, nothing skipped, deselected or xfailed beyond it, the pass-or-fail machinery
untouched, no value of the work equal to anything. It seals nothing and schedules nothing.
"""

from __future__ import annotations

import fnmatch
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import groundskeeper.sandbox.fence as fences
from groundskeeper.path_patterns import covers
from groundskeeper.pytest_files import ANYWHERE, AT_ROOT, PTH
from groundskeeper.sandbox import cpython

__all__ = [
    "SUITE_TIMEOUT",
    "Baseline",
    "SuiteRecord",
    "SuiteRefused",
    "judge_suite",
    "refused_configuration",
    "run_suite",
]

#: pytest's status when some test failed.
_TESTS_FAILED = 1
#: pytest's status when it collected no test.
_NO_TESTS_COLLECTED = 5
#: Seconds one run of a suite may take in the sandbox.
SUITE_TIMEOUT = 300.0
_REPORT = "gk-suite-{}.json"
_WALK_LIMIT = 20_000  # entries looked at for configuration files; more is refused


class SuiteRefused(Exception):
    """The suite cannot be judged: `code` and `message` say why (a contract failure);
    `output`, what the suite printed, is kept apart: it may show a held-out test, and only
    the caller knows whether a worker will read it."""

    def __init__(
        self, code: str, message: str, detail: dict[str, Any] | None = None, output: str = ""
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail or {}
        self.output = output


@dataclass(frozen=True)
class SuiteRecord:
    """What our plugin recorded of one run of the suite."""

    collected: tuple[str, ...]
    outcomes: dict[str, str]  # id → passed, failed, skipped, xfailed, xpassed
    deselected: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()  # collection errors, by node id
    tampered: tuple[str, ...] = ()  # machinery replaced while the suite ran
    exitstatus: int = 0
    output: str = ""
    always_equal: tuple[str, ...] = ()  # `id: Type`: a value of the work equal to anything
    plugins: tuple[str, ...] = ()  # `plugin NAME (FILE)`, `hook H of plugin NAME (FILE)`
    skipped_files: tuple[str, ...] = ()  # test modules pytest skipped at collection
    failures: dict[str, str] = field(default_factory=dict)  # failed id → how (its crash)


@dataclass(frozen=True)
class Baseline:
    """The suite before any worker ran: its ids, those it skipped (or xfailed or deselected),
    the files whose collection failed then (their tests could not be counted), and the
    modules pytest skipped at collection then (`skipped_files`: a module-level
    `pytest.importorskip` of the module the work is to write, adversary-19 F16): their tests,
    collected now, are no new tests but red ones, which must pass. `failed`: each test that
    failed then, and how (adversary-19 F22: one a later task of an ORDERED sequence is left)."""

    collected: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    broken_files: tuple[str, ...] = field(default=())
    skipped_files: tuple[str, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "collected": list(self.collected),
            "skipped": list(self.skipped),
            "broken_files": list(self.broken_files),
            "skipped_files": list(self.skipped_files),
            "failed": dict(self.failed),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Baseline:
        failed = data.get("failed", {})  # a record kept before these were: none
        return cls(
            tuple(data["collected"]),
            tuple(data["skipped"]),
            tuple(data["broken_files"]),
            tuple(data.get("skipped_files", ())),
            {str(k): str(v) for k, v in failed.items()} if isinstance(failed, dict) else {},
        )

    @classmethod
    def of(cls, record: SuiteRecord) -> Baseline:
        skipped = [i for i, o in record.outcomes.items() if o in ("skipped", "xfailed")]
        broken = sorted({_file_of(e) for e in record.errors})
        return cls(
            record.collected,
            tuple(sorted(skipped + list(record.deselected))),
            tuple(broken),
            tuple(sorted(set(record.skipped_files))),
            {i: record.failures.get(i, "") for i, o in record.outcomes.items() if o == "failed"},
        )


def refused_configuration(
    workdir: Path, fence: fences.Fence, protect: tuple[str, ...] = ()
) -> tuple[list[str], str | None]:
    """The configuration files a worker could have written (not protected inputs), and the
    protected root configuration to run with (None: our empty one)."""
    root = Path(os.path.realpath(workdir))
    refused: list[str] = []
    config: str | None = None
    seen = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not fence.hides_name(d))
        seen += len(dirs) + len(files)
        if seen > _WALK_LIMIT:
            raise SuiteRefused("C021", f"the workdir holds more than {_WALK_LIMIT} entries")
        here = Path(top)
        for name in sorted(files):
            path = here / name
            relative = path.relative_to(root).as_posix()
            at_root = here == root and name in AT_ROOT
            if not (name in ANYWHERE or fnmatch.fnmatchcase(name, PTH) or at_root):
                continue
            if at_root and not _configures_pytest(path, name):
                continue
            if _protected(path, fence) or covers(protect, relative):
                if at_root and config is None:
                    config = relative
                continue
            refused.append(relative)
    return refused, config


def _configures_pytest(path: Path, name: str) -> bool:
    section = AT_ROOT[name]
    if not section:
        return True
    try:
        return section in path.read_text(errors="replace")
    except OSError:
        return True  # unreadable: refused rather than guessed


def _protected(path: Path, fence: fences.Fence) -> bool:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) in fence.protected_ids


def run_suite(
    workdir: Path,
    target: str,
    *,
    timeout: float = SUITE_TIMEOUT,
    protect: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
) -> SuiteRecord:
    """Run the suite at `target` (a path in the workdir) once, read-only; its record, or
    `SuiteRefused` when worker-written configuration is there or no record came back.
    `ignore`: files (relative paths) pytest does not collect, nor import."""
    refused, config = refused_configuration(workdir, fences.active(), protect)
    if refused:
        raise SuiteRefused(
            "C021",
            "configuration the worker could have written is not used: "
            + ", ".join(refused)
            + " (a suite's conftest.py, pytest.toml, pytest.ini, pyproject [tool.pytest],"
            " sitecustomize, usercustomize and .pth files must be protected inputs)",
            {"refused": refused},
        )
    report = _REPORT.format(secrets.token_hex(8))
    ini = f"/workdir/{config}" if config else f"{cpython.SITE_GUEST}/gk_pytest.ini"
    argv = [
        "python3", "-E", "-s", "-m", "pytest", "-c", ini, "--rootdir", "/workdir",
        "-p", "gk_suite", "-p", "no:cacheprovider", "-p", "no:faulthandler",
        "-o", "enable_assertion_pass_hook=true",
        "--capture=sys", "-q", "--color=no", "-rfEsxX",
        *(f"--ignore=/workdir/{path}" for path in ignore), "--", target,
    ]  # fmt: skip
    env = {
        "GK_SUITE_REPORT": f"{cpython.TMP_GUEST}/{report}",
        "GK_SUITE_PATH": f"/workdir/{target}".rstrip("/") if target != "." else "/workdir",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    from groundskeeper.sandbox.cpython_setup import ensure

    ran = cpython.run_alone(argv, workdir, env=env, timeout=timeout, keep=(report,), ensure=ensure)
    output = (ran.stdout + ran.stderr)[-4000:]
    data = ran.kept.get(report)
    if ran.fault is not None:
        raise SuiteRefused(
            "C025", f"the suite was stopped: {ran.fault} limit", output=output[-300:]
        )
    if data is None:
        raise SuiteRefused(
            "C025",
            f"the suite ended (status {ran.status}) before pytest finished: something exited "
            "the process early or it crashed",
            output=output[-600:],
        )
    try:
        raw = json.loads(data)
        return SuiteRecord(
            tuple(raw["collected"]),
            {str(k): str(v) for k, v in raw["outcomes"].items()},
            tuple(raw["deselected"]),
            tuple(raw["errors"]),
            tuple(raw["tampered"]),
            int(raw["exitstatus"]),
            output,
            tuple(str(v) for v in raw.get("always_equal", ())),
            _foreign_plugins(raw.get("plugins", ()), workdir, protect),
            tuple(str(v) for v in raw.get("skipped_files", ())),
            {str(k): str(v) for k, v in raw.get("failures", {}).items()},
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise SuiteRefused("C025", f"the suite's record cannot be read: {error}") from None


def _foreign_plugins(
    found: list[dict[str, str]], workdir: Path, protect: tuple[str, ...]
) -> tuple[str, ...]:
    """The plugins and hook implementations our plugin found defined outside pytest, the
    standard library and the suite's protected configuration, less those of a workdir file
    that is a protected input (a plugin the project's own configuration names): each as
    `what (file)`, the file relative to the workdir."""
    root = Path(os.path.realpath(workdir))
    fence = fences.active()
    named: list[str] = []
    for entry in found:
        where = str(entry["file"])
        if where.startswith("/workdir/"):
            relative = where.removeprefix("/workdir/")
            if _protected(root / relative, fence) or covers(protect, relative):
                continue
            where = relative
        text = f"{entry['what']} ({where})"
        if text not in named:
            named.append(text)
    return tuple(named)


def judge_suite(
    record: SuiteRecord,
    baseline: Baseline | None,
    minimum: int = 0,
    held_out: tuple[str, ...] = (),
    moved: frozenset[str] = frozenset(),
    left_to: Callable[[str], str | None] | None = None,
    made: frozenset[str] = frozenset(),
) -> str:
    """A message when the suite passes as acceptance; `SuiteRefused` naming why not. A test
    of a `held_out` file (hidden from workers) is counted in a message, never named: its id
    (a parametrized one spells its inputs) would tell the worker what it checks. `moved`:
    red-first ids that run now from a file the worker was entitled to add (not gone).
    `left_to`: the later task of an ORDERED sequence a test is left to, if any
    (`plan.suite_paths.left_to_later`): a test that failed before any work and fails now the
    same way is tolerated when one is (adversary-19 F22); that task is judged on it. `made`:
    ids not collected before any work that the asked work made (a case added to an existing
    parametrized test's data): not new (C022), judged as any test."""
    name = _Naming(held_out)
    if record.tampered:
        raise SuiteRefused(
            "C024",
            "the suite's pass-or-fail machinery was replaced while it ran: "
            + ", ".join(record.tampered),
        )
    if record.plugins:
        raise SuiteRefused(
            "C028",
            "pytest ran a plugin or hook implementation that is not pytest's, the contract's or"
            " the suite's protected configuration's (code under test registered it, or a file"
            " that is not a protected input): " + ", ".join(record.plugins[:10]),
            {"plugins": list(record.plugins)},
        )
    if record.always_equal:
        raise SuiteRefused(
            "C027",
            "a value that compares equal to anything decided an assertion: "
            + name(list(record.always_equal)),
            {"always_equal": list(record.always_equal)},
        )
    # an xfail test that passes (non-strict: pytest's own verdict is a pass, status 0) is a
    # pass — the work done that the mark waited for (adversary-19 F17); a strict one pytest
    # reports as failed
    failed = sorted(i for i, o in record.outcomes.items() if o == "failed")
    left = _left(record, baseline, failed, left_to)
    failed = [i for i in failed if i not in left]
    if record.errors or failed:
        named = [*(f"{e} (collection error)" for e in record.errors), *failed]
        raise SuiteRefused(
            "C020",
            f"{len(named)} of the suite's tests failed: {name(named)}"
            + _red_before(failed, baseline, left_to),
            {"failed": named},
            record.output[-1500:],
        )
    missing = [i for i in record.collected if i not in record.outcomes]
    if missing:
        raise SuiteRefused("C025", f"tests collected but never reported: {name(missing)}")
    if baseline is None:
        raise SuiteRefused(
            "C026", "no red-first record of the suite (taken before any worker ran) to compare"
        )
    _compare(record, baseline, name, moved, made)
    # a run without the files every red-first test moved into (a renamed sole module)
    everything_moved = bool(baseline.collected) and set(baseline.collected) <= moved
    if record.exitstatus == _NO_TESTS_COLLECTED and not record.collected and everything_moved:
        return f"the {len(baseline.collected)} red-first tests all moved, as asked"
    if record.exitstatus != 0 and not (record.exitstatus == _TESTS_FAILED and left):
        raise SuiteRefused("C020", f"pytest exited with status {record.exitstatus}")
    passed = sum(1 for o in record.outcomes.values() if o in ("passed", "xpassed"))
    if passed < minimum:
        raise SuiteRefused("C026", f"{passed} tests passed, fewer than --min {minimum}")
    if left:
        later = ", ".join(f"{name([i])} to task {t}" for i, t in left.items())
        return (
            f"{passed} passed; {len(left)} red before any work and failing the same way, left"
            f" to a later task of the sequence: {later}"
        )
    return f"{passed} passed, the {len(baseline.collected)} red-first tests all among them"


def _left(
    record: SuiteRecord,
    baseline: Baseline | None,
    failed: list[str],
    left_to: Callable[[str], str | None] | None,
) -> dict[str, str]:
    """Each failed test left to a later task (by its id): one that failed before any work,
    the same way (its crash's message, adversary-19 F22), that `left_to` names a task for."""
    if left_to is None or baseline is None:
        return {}
    found: dict[str, str] = {}
    for test in failed:
        before = baseline.failed.get(test)
        if before is None or before != record.failures.get(test):
            continue
        later = left_to(test)
        if later is not None:
            found[test] = later
    return found


def _red_before(
    failed: list[str], baseline: Baseline | None, left_to: Callable[[str], str | None] | None
) -> str:
    """What the author of an ORDERED sequence can do about a failed test that was red before
    any work too."""
    red = [i for i in failed if baseline is not None and i in baseline.failed]
    if not red or left_to is None:  # a task with no later one in an ORDERED sequence
        return ""
    return (
        f" ({len(red)} of them failed before any work too: a test may be left to a later task"
        " of an ORDERED sequence, with a pytest contract that is not soft, whose text names"
        " it — the test function, or the name it"
        " tests, as `mul` for test_mul — when this task's text does not, and it fails the same"
        " way as before the work)"
    )


class _Naming:
    """Test ids as a message names them: ten at most, those of held-out files counted."""

    def __init__(self, held_out: tuple[str, ...]) -> None:
        self.held_out = frozenset(held_out)

    def __call__(self, ids: list[str]) -> str:
        shown = [
            i for i in ids if _file_of(i.removesuffix(" (collection error)")) not in self.held_out
        ]
        hidden = len(ids) - len(shown)
        text = ", ".join(shown[:10])
        if len(shown) > 10:
            text += f" and {len(shown) - 10} more"
        if hidden:
            tests = "test" if hidden == 1 else "tests"
            text = f"{text} and {hidden} held-out {tests}" if text else f"{hidden} held-out {tests}"
        return text


def _compare(
    record: SuiteRecord,
    baseline: Baseline,
    name: _Naming,
    moved: frozenset[str] = frozenset(),
    made: frozenset[str] = frozenset(),
) -> None:
    now = set(record.collected)
    vanished = [i for i in baseline.collected if i not in now and i not in moved]
    if vanished:
        raise SuiteRefused(
            "C022",
            f"tests collected before any work are gone: {name(vanished)}",
            {"vanished": vanished},
        )
    before = set(baseline.collected)
    # a file the red-first run could not count (its collection failed) or that pytest skipped
    # whole at collection (adversary-19 F16): its tests now are red ones, judged as any test
    uncounted = {*baseline.broken_files, *baseline.skipped_files}
    new = [
        i
        for i in record.collected
        if i not in before and i not in made and _file_of(i) not in uncounted
    ]
    if new:
        raise SuiteRefused(
            "C022", f"tests not collected before any work: {name(new)}", {"new": new}
        )
    skipped = [
        i
        for i, o in record.outcomes.items()
        if o in ("skipped", "xfailed") and i not in baseline.skipped
    ]
    skipped += [i for i in record.deselected if i not in baseline.skipped]
    # a whole module skipped at collection that was not before (its import raises a skip:
    # `unittest.SkipTest` or a module-level `pytest.skip` in the module the work is to
    # write, adversary-28 F4): none of its tests ran, so none of them passed
    skipped += [
        f"{f} (skipped at collection)"
        for f in record.skipped_files
        if f not in baseline.skipped_files
    ]
    if skipped:
        raise SuiteRefused(
            "C023",
            f"tests skipped, xfailed or deselected beyond the red-first run: "
            f"{name(sorted(skipped))}",
            {"skipped": sorted(skipped)},
        )


def _file_of(node_id: str) -> str:
    return node_id.split("::", 1)[0]
