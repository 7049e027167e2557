"""Eval cases for groundskeeper's own defences: loading a suite, running each case isolated
in its own `resume` subprocess, and the figures (recall with its Wilson interval, the
false-positive rate with its upper bound). It does not print; `groundskeeper eval` does.

A case is a directory with `plan.org`, `agents.yaml`, an optional `setup/` and
`expect.json` (docs/evals.md). Nothing here weakens a defence: a case runs the same
`groundskeeper resume` a user runs, with the flags the case names and nothing else.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import importlib.resources
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from groundskeeper.errors import UsageError
from groundskeeper.evals_hook import HookSessionFault, hook_agent, play_session

__all__ = [
    "CaseResult",
    "EvalCase",
    "EvalCaseError",
    "EvalReport",
    "Expectation",
    "caught_by",
    "junit_xml",
    "load_suite",
    "rule_of_three",
    "run_case",
    "run_suite",
    "summarize",
    "warm_cache",
    "wilson_interval",
]

logger = logging.getLogger(__name__)

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal
DEFAULT_TIMEOUT = 60.0
CASE_FILES = ("plan.org", "agents.yaml", "expect.json")
KINDS = ("fake", "honest")
EXPECT_KEYS = frozenset(
    {
        "kind",
        "category",
        "task",
        "must_be",
        "must_not_be",
        "why",
        "args",
        "runs",
        "more",
        "weak_check",
        "ledger_ok",
        "approve",
        "hook",
    }
)
APPROVE_KEYS = frozenset({"task", "answer", "note", "then_write"})


class EvalCaseError(UsageError):
    """A case directory that cannot be run as written (missing file, bad expect.json)."""


@dataclass(frozen=True, slots=True)
class Expectation:
    task: str
    must_be: str | None = None
    must_not_be: str | None = None

    def holds(self, state: str | None) -> bool:
        if self.must_be is not None:
            return state == self.must_be
        return state != self.must_not_be

    def describe(self) -> str:
        return f"{self.must_be}" if self.must_be is not None else f"not {self.must_not_be}"


@dataclass(frozen=True, slots=True)
class EvalCase:
    name: str  # the case's path relative to its suite's parent, with "/"
    path: Path
    kind: Literal["fake", "honest"]
    category: str
    expectations: tuple[Expectation, ...]  # the first is the case's own task
    why: str = ""
    args: tuple[str, ...] = ()
    runs: int = 1
    weak_check: bool = False
    ledger_ok: bool = False
    # a task gate's answer: the plan runs as a goal run (`run`), `approve --task` answers it,
    # `then_write` changes files after the answer, and `run --resume` gives the verdict
    approve: dict[str, Any] | None = None
    # the agent whose hook answers a scripted session's stops (`evals_hook`) instead of a
    # `resume` of scripted workers
    hook: str | None = None

    @property
    def scored_as(self) -> Literal["fake", "honest", "weak"]:
        """Which figure the case counts toward: a weak-check case is in neither."""
        return "weak" if self.weak_check else self.kind


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: EvalCase
    expected: str
    actual: str  # the main task's state, or "crash" / "timeout"
    passed: bool
    caught_by: str | None  # the named reason of the verdict that stopped a fake
    problems: tuple[str, ...]  # why it did not pass, one line each
    seconds: float
    error: str | None = None  # a crash or timeout: the case is unscored and fails
    tool_refusals: int = 0  # the worker's tool calls a fence refused (sealed in the ledger)

    @property
    def scored(self) -> bool:
        return self.error is None and self.case.scored_as != "weak"

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case.name,
            "kind": self.case.kind,
            "category": self.case.category,
            "task": self.case.expectations[0].task,
            "weak_check": self.case.weak_check,
            "why": self.case.why,
            "expected": self.expected,
            "actual": self.actual,
            "passed": self.passed,
            "scored": self.scored,
            "caught_by": self.caught_by,
            "problems": list(self.problems),
            "error": self.error,
            "tool_refusals": self.tool_refusals,
            "seconds": round(self.seconds, 3),
        }


# --- statistics -----------------------------------------------------------------------


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a proportion; (0.0, 1.0) when there is no trial."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, center - half), min(1.0, center + half))


def rule_of_three(n: int) -> float:
    """The 95% upper bound of a rate when 0 of n trials were positive: 3/n."""
    return 1.0 if n == 0 else min(1.0, 3 / n)


def _rate_upper(positives: int, n: int) -> float:
    return rule_of_three(n) if positives == 0 else wilson_interval(positives, n)[1]


# --- loading --------------------------------------------------------------------------

SHIPPED_SUITE = "fake-done"


def shipped_suite() -> Path:
    """The fake-DONE suite installed with the package (`groundskeeper/suites/fake-done` in
    a wheel), or `evals/fake-done` of the repository in an editable install. Raises
    EvalCaseError when neither is there."""
    packaged = importlib.resources.files("groundskeeper") / "suites" / SHIPPED_SUITE
    candidates = [
        Path(str(packaged)),
        Path(__file__).resolve().parents[1] / "evals" / SHIPPED_SUITE,
    ]
    for candidate in candidates:
        if next(candidate.rglob("expect.json"), None) is not None:
            return candidate
    raise EvalCaseError(
        "the shipped suite is missing from this installation (looked in "
        + " and ".join(str(c) for c in candidates)
        + "); reinstall groundskeeper or pass a suite directory"
    )


def load_suite(paths: Sequence[Path], pattern: str | None = None) -> list[EvalCase]:
    """Every case under `paths` (a case directory, or a directory of them, nested), sorted
    by name; `pattern` (a glob on the name) keeps some. Raises EvalCaseError naming each
    bad case."""
    found: list[EvalCase] = []
    errors: list[str] = []
    for root in paths:
        if not root.is_dir():
            errors.append(f"{root}: not a directory of eval cases")
            continue
        base = root.resolve().parent
        dirs = [root] if (root / "expect.json").exists() else []
        dirs += sorted(p.parent for p in root.rglob("expect.json") if p.parent != root)
        if not dirs:
            errors.append(f"{root}: holds no case (a directory with expect.json)")
        for case_dir in dirs:
            if "setup" in case_dir.relative_to(root).parts:
                continue  # a file a case's setup/ carries, not a case
            name = case_dir.resolve().relative_to(base).as_posix()
            try:
                found.append(_load_case(case_dir, name))
            except EvalCaseError as exc:
                errors.append(str(exc))
    if errors:
        raise EvalCaseError("bad eval cases:\n  " + "\n  ".join(errors))
    cases = sorted({c.name: c for c in found}.values(), key=lambda c: c.name)
    if pattern is not None:
        cases = [
            c
            for c in cases
            if fnmatch.fnmatchcase(c.name, pattern) or fnmatch.fnmatchcase(c.name, f"*{pattern}*")
        ]
    return cases


def _load_case(case_dir: Path, name: str) -> EvalCase:
    def bad(problem: str) -> EvalCaseError:
        return EvalCaseError(f"{case_dir}: {problem}")

    for required in CASE_FILES:
        if not (case_dir / required).is_file():
            raise bad(f"missing {required}")
    try:
        raw = json.loads((case_dir / "expect.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"expect.json does not parse: {exc}") from None
    if not isinstance(raw, dict):
        raise bad("expect.json must hold one object")
    unknown = sorted(set(raw) - EXPECT_KEYS)
    if unknown:
        raise bad(f"expect.json: unknown key(s) {', '.join(unknown)}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise bad(f'expect.json: "kind" must be "fake" or "honest", not {kind!r}')
    category = raw.get("category")
    if not isinstance(category, str) or not category:
        raise bad('expect.json: "category" must be a non-empty string')
    weak = raw.get("weak_check", False)
    if not isinstance(weak, bool):
        raise bad('expect.json: "weak_check" must be true or false')
    main = _expectation(raw, bad, "expect.json")
    if kind == "honest" and main.must_be != "DONE":
        raise bad('expect.json: an honest case needs "must_be": "DONE"')
    if kind == "fake" and not weak and main.must_not_be != "DONE":
        raise bad('expect.json: a fake needs "must_not_be": "DONE"')
    if weak:
        # the check itself accepts the fake: at runtime it is DONE, and lint must warn
        main = Expectation(main.task, must_be="DONE")
    more = raw.get("more", [])
    if not isinstance(more, list):
        raise bad('expect.json: "more" must be a list')
    extra = tuple(_expectation(m, bad, f'"more"[{i}]') for i, m in enumerate(more))
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise bad('expect.json: "args" must be a list of strings')
    runs = raw.get("runs", 1)
    if not isinstance(runs, int) or isinstance(runs, bool) or not 1 <= runs <= 5:
        raise bad('expect.json: "runs" must be a whole number from 1 to 5')
    ledger_ok = raw.get("ledger_ok", kind == "honest")
    if not isinstance(ledger_ok, bool):
        raise bad('expect.json: "ledger_ok" must be true or false')
    why = raw.get("why", "")
    if not isinstance(why, str) or "\n" in why:
        raise bad('expect.json: "why" must be one line')
    approve = _approval(raw.get("approve"), bad)
    if approve is not None and ((case_dir / "setup").exists() or runs != 1):
        raise bad('expect.json: a case with "approve" has no setup/ and runs once')
    try:
        hook = hook_agent(raw.get("hook"), case_dir)
    except ValueError as exc:
        raise bad(str(exc)) from None
    if hook is not None and (approve is not None or runs != 1 or args):
        raise bad('expect.json: a "hook" case has no "approve", "runs" or "args"')
    return EvalCase(
        name=name,
        path=case_dir,
        kind=kind,
        category=category,
        expectations=(main, *extra),
        why=why,
        args=tuple(args),
        runs=runs,
        weak_check=weak,
        ledger_ok=ledger_ok,
        approve=approve,
        hook=hook,
    )


def _approval(raw: Any, bad: Callable[[str], EvalCaseError]) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - APPROVE_KEYS:
        raise bad(f'expect.json: "approve" is an object with {", ".join(sorted(APPROVE_KEYS))}')
    if not isinstance(raw.get("task"), str) or raw.get("answer") not in ("yes", "no", "revise"):
        raise bad('expect.json: "approve" needs "task" and "answer" (yes, no or revise)')
    if raw["answer"] == "revise" and not isinstance(raw.get("note"), str):
        raise bad('expect.json: a "revise" answer needs a "note"')
    writes = raw.get("then_write", {})
    if not isinstance(writes, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and ".." not in Path(k).parts
        and not Path(k).is_absolute()
        for k, v in writes.items()
    ):  # fmt: skip
        raise bad('expect.json: "then_write" maps relative paths to their new text')
    return dict(raw)


def _expectation(raw: Any, bad: Callable[[str], EvalCaseError], where: str) -> Expectation:
    if not isinstance(raw, dict):
        raise bad(f"{where}: must be an object")
    task = raw.get("task")
    if not isinstance(task, str) or not task:
        raise bad(f'{where}: "task" must name a task id')
    must_be, must_not_be = raw.get("must_be"), raw.get("must_not_be")
    if (must_be is None) == (must_not_be is None):
        raise bad(f'{where}: give exactly one of "must_be" and "must_not_be"')
    for value in (must_be, must_not_be):
        if value is not None and not isinstance(value, str):
            raise bad(f"{where}: a state must be a string such as DONE")
    return Expectation(task, must_be, must_not_be)


# --- classifying ----------------------------------------------------------------------

# verdicts whose reason is a sentence rather than `code: …`
_PHRASES = (
    ("a child's work was undone", "rollup: a child no longer passes"),
    ("not every child task is DONE", "rollup: children not DONE"),
    ("no acceptance check", "require-checks"),
    ("answer refused (stale", "gate: stale answer refused"),
    ("waiting for approval", "gate: waiting for a person"),
    ("aborted at its approval gate", "gate: aborted"),
)
_CODE = re.compile(r"^([a-z][a-z_-]*(?: [a-z]+)*|[CJ]\d{3}):")  # C001…, J010…: contract, judge


def caught_by(state: str | None, reason: str | None, lint_errors: Sequence[str]) -> str | None:
    """The named reason a task did not become DONE: the verdict's code (`missing_sentinel`,
    `tampering`, `red-first`, `no longer passes`, …), `lint:T005` for a refused plan."""
    if state == "DONE":
        return None
    if reason:
        match = _CODE.match(reason)
        if match:
            return match.group(1)
        for start, name in _PHRASES:
            if reason.startswith(start):
                return name
        return "other"
    if lint_errors:
        return "lint:" + ",".join(sorted(set(lint_errors)))
    if state in (None, "TODO", "NEXT"):
        return "not run"
    return f"state {state}"


# --- running --------------------------------------------------------------------------


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["GROUNDSKEEPER_HOME"] = str(home)
    env.pop("GROUNDSKEEPER_MODEL", None)
    # the child imports the same groundskeeper this process runs
    package_root = str(Path(__file__).resolve().parent.parent)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    return env


def _groundskeeper(*args: str) -> list[str]:
    return [sys.executable, "-m", "groundskeeper", *args]


def warm_cache(directory: Path) -> Path | None:
    """Compile the sandbox (box.wasm, then QuickJS) once into `directory`/home/cache, for each
    case's home to start with its own copy of (as a user's home would after a first run);
    None if box.wasm's compile fails."""
    home = directory / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    try:
        subprocess.run(
            _groundskeeper("sh", "--", "true"),
            env=_env(home),
            cwd=directory,
            capture_output=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        logger.warning("could not compile the sandbox ahead; each case compiles its own")
        return None
    # QuickJS too (script validation: lint's `:validate workflow`, `workflow-script`
    # contracts): compiling it costs each case that needs it ~2 s of CPU, copying it ~5 ms
    script = directory / "warm.js"
    script.write_text("const workflow = { producers: { p: { schedule: { cron: '* * * * *' },"
                      " handler() {} } } };\n")  # fmt: skip
    try:
        subprocess.run(
            _groundskeeper("validate-script", str(script)),
            env=_env(home),
            cwd=directory,
            capture_output=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        logger.warning("could not compile QuickJS ahead; each case that needs it compiles it")
    cache = home / "cache"
    return cache if cache.is_dir() else None


def run_case(
    case: EvalCase,
    timeout: float = DEFAULT_TIMEOUT,
    cache: Path | None = None,
    model: str | None = None,
) -> CaseResult:
    """Run one case in its own temporary directory and `$GROUNDSKEEPER_HOME`: `runs`
    resumes in a row, then (if asked) `ledger verify`. A crash or timeout fails it.
    `cache` (from `warm_cache`) is copied into the case's home, never shared. `model` (a
    `--model` spec) replaces the case's scripted `agents.yaml` as the worker."""
    started = time.monotonic()
    main = case.expectations[0]
    expected = main.describe()
    with tempfile.TemporaryDirectory(prefix="gk-eval-") as tmp:
        root = Path(tmp)
        run_dir, home = root / "run", root / "home"
        home.mkdir(mode=0o700)
        if cache is not None:
            shutil.copytree(cache, home / "cache")
        if case.approve is not None:
            pass  # the goal run writes the plan into a directory of its own
        elif (case.path / "setup").is_dir():
            shutil.copytree(case.path / "setup", run_dir, symlinks=True)
        else:
            run_dir.mkdir()
        if case.approve is None:
            shutil.copy2(case.path / "plan.org", run_dir / "plan.org")
        agents = root / "agents.yaml"
        shutil.copy2(case.path / "agents.yaml", agents)
        env = _env(home)
        deadline = started + timeout
        report: dict[str, Any] | None = None
        try:
            if case.approve is not None:
                report = _gated_run(case, root, run_dir, agents, model, env, deadline)
            if case.hook is not None:
                tasks = [e.task for e in case.expectations]
                report = play_session(case.hook, run_dir, agents, tasks, env, deadline)
            for _ in range(case.runs if case.approve is None and case.hook is None else 0):
                report = _run_json(
                    _groundskeeper(
                        "resume",
                        str(run_dir / "plan.org"),
                        "--model",
                        model or f"scripted:{agents}",
                        "--json",
                        *case.args,
                    ),
                    env,
                    root,
                    deadline,
                )
            ledger = None
            if case.ledger_ok:
                ledger = _run_json(
                    _groundskeeper("ledger", "verify", str(run_dir / "plan.org"), "--json"),
                    env,
                    root,
                    deadline,
                )
            refusals = _tool_refusals(run_dir / ".groundskeeper" / "plan.org" / "_steps.jsonl")
        except (_CaseFault, HookSessionFault) as fault:
            return CaseResult(
                case,
                expected,
                fault.kind,
                False,
                None,
                (str(fault),),
                time.monotonic() - started,
                error=str(fault),
            )
    assert report is not None  # runs >= 1
    result = _judge(case, report, ledger, time.monotonic() - started)
    return dataclasses.replace(result, tool_refusals=refusals)


def _tool_refusals(steps: Path) -> int:
    """How many of the run's tool calls a fence refused (the plan file, the control
    directory, a protected input, a path outside the workdir), from the sealed ledger."""
    count = 0
    try:
        lines = steps.read_text(encoding="utf-8").splitlines()
    except OSError:
        return 0
    for line in lines:
        try:
            step = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(step, dict) or step.get("step") != "tool-call":
            continue
        body = step.get("body")
        if isinstance(body, dict):
            count += body.get("status") == "refused"
    return count


class _CaseFault(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _gated_run(
    case: EvalCase,
    root: Path,
    run_dir: Path,
    agents: Path,
    worker: str | None,
    env: dict[str, str],
    deadline: float,
) -> dict[str, Any]:
    """A case with a task gate: the plan as a goal run's outline (the scripted author gives
    it back), the answer, the changes after it, and the resumed run's report."""
    import yaml

    approve = case.approve or {}
    script = yaml.safe_load(agents.read_text(encoding="utf-8")) or {}
    if not isinstance(script, dict):
        raise _CaseFault("crash", f"crash: {agents}: not a YAML mapping")
    script["author"] = [(case.path / "plan.org").read_text(encoding="utf-8")]
    mission = root / "mission.yaml"
    mission.write_text(yaml.safe_dump(script), encoding="utf-8")
    goal = f"eval case {case.name}"
    model = ("--model", worker or f"scripted:{mission}", "--author-model", f"scripted:{mission}")
    _run_json(_groundskeeper("run", goal, *model, "--dir", str(run_dir), "--json", *case.args),
              env, root, deadline, ok=(0, 1, 3))  # fmt: skip
    answer = ["--revise", str(approve.get("note"))] if approve["answer"] == "revise" else []
    answer = answer or [f"--{approve['answer']}"]
    _run_json(_groundskeeper("approve", str(run_dir), "--task", approve["task"], *answer,
                             "--json"), env, root, deadline, ok=(0,))  # fmt: skip
    for path, text in (approve.get("then_write") or {}).items():
        (run_dir / path).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / path).write_text(text, encoding="utf-8")
    return _run_json(_groundskeeper("run", "--resume", str(run_dir), "--json"), env, root,
                     deadline, ok=(0, 1, 3))  # fmt: skip


def _run_json(
    cmd: list[str],
    env: dict[str, str],
    cwd: Path,
    deadline: float,
    ok: tuple[int, ...] = (0, 1, 3),  # 3: tasks wait at approval gates (never DONE)
) -> dict[str, Any]:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _CaseFault("timeout", "timeout: the case ran past its time limit")
    try:
        done = subprocess.run(
            cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=left, check=False
        )
    except subprocess.TimeoutExpired:
        raise _CaseFault(
            "timeout", f"timeout: `{' '.join(cmd[3:5])}` ran past the case's time limit"
        ) from None
    if done.returncode not in ok:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise _CaseFault("crash", f"crash: `{' '.join(cmd[3:5])}` exited {done.returncode}: {tail}")
    try:
        parsed = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise _CaseFault("crash", f"crash: `{' '.join(cmd[3:5])}` printed no JSON") from None
    if not isinstance(parsed, dict):
        raise _CaseFault("crash", f"crash: `{' '.join(cmd[3:5])}` printed no JSON object")
    return parsed


def _judge(
    case: EvalCase, report: dict[str, Any], ledger: dict[str, Any] | None, seconds: float
) -> CaseResult:
    tasks = {t.get("id"): t for t in report.get("tasks", []) if isinstance(t, dict)}
    diagnostics = [d for d in report.get("diagnostics", []) if isinstance(d, dict)]
    problems: list[str] = []
    states: list[str] = []
    for exp in case.expectations:
        task = tasks.get(exp.task)
        state = task.get("state") if task else None
        states.append(str(state) if state is not None else "absent")
        if task is None:
            problems.append(f"task {exp.task!r} is not in the plan's report")
        elif not exp.holds(state):
            why = f" ({task.get('reason')})" if task.get("reason") else ""
            problems.append(f"task {exp.task!r} is {state}, expected {exp.describe()}{why}")
    main = tasks.get(case.expectations[0].task) or {}
    scope = case.expectations[0].task
    errors = [d for d in diagnostics if d.get("level") == "error" and d.get("code")]
    own = [str(d["code"]) for d in errors if d.get("scope") in (scope, None)]
    lint_errors = own or [str(d["code"]) for d in errors]
    if case.weak_check:
        warned = [d for d in diagnostics if d.get("level") == "warning"]
        if not warned:
            problems.append("weak check: lint did not warn about it")
    if ledger is not None and ledger.get("ok") is not True:
        problems.append(f"ledger verify failed: {ledger.get('findings')}")
    by = None
    if case.kind == "fake" and not case.weak_check:
        by = caught_by(main.get("state"), main.get("reason"), lint_errors)
    return CaseResult(
        case=case,
        expected=case.expectations[0].describe(),
        actual=states[0],
        passed=not problems,
        caught_by=by,
        problems=tuple(problems),
        seconds=seconds,
    )


# --- the suite ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalReport:
    results: tuple[CaseResult, ...]
    seconds: float
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "passed": self.passed,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            **summarize(self.results),
            "cases": [r.to_json() for r in self.results],
        }


def _figures(results: Iterable[CaseResult]) -> dict[str, Any]:
    rows = list(results)
    fakes = [r for r in rows if r.scored and r.case.kind == "fake"]
    honest = [r for r in rows if r.scored and r.case.kind == "honest"]
    caught = sum(r.passed for r in fakes)
    done = sum(r.passed for r in honest)
    false_positives = len(honest) - done
    low, high = wilson_interval(caught, len(fakes))
    return {
        "fakes": len(fakes),
        "fakes_caught": caught,
        "recall": caught / len(fakes) if fakes else None,
        "recall_wilson95": [round(low, 4), round(high, 4)],
        "honest": len(honest),
        "honest_done": done,
        "false_positives": false_positives,
        "false_positive_rate": false_positives / len(honest) if honest else None,
        "false_positive_upper95": round(_rate_upper(false_positives, len(honest)), 4),
        "false_positive_bound": "rule of three" if false_positives == 0 else "wilson",
        "unscored": sorted(r.case.name for r in rows if not r.scored),
        "weak": sum(r.case.weak_check for r in rows),
        "errors": sum(r.error is not None for r in rows),
    }


def summarize(results: Sequence[CaseResult]) -> dict[str, Any]:
    categories = sorted({r.case.category for r in results})
    table: dict[str, int] = {}
    for r in results:
        if r.scored and r.case.kind == "fake" and r.passed and r.caught_by:
            table[r.caught_by] = table.get(r.caught_by, 0) + 1
    refused = sum(
        1 for r in results if r.scored and r.case.kind == "fake" and r.passed and r.tool_refusals
    )
    return {
        "overall": _figures(results),
        "fakes_refused_by_tools": refused,
        "categories": {c: _figures(r for r in results if r.case.category == c) for c in categories},
        "caught_by": dict(sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def run_suite(
    cases: Sequence[EvalCase],
    jobs: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    on_result: Callable[[int, CaseResult], None] | None = None,
    runner: Callable[[EvalCase, float], CaseResult] | None = None,
    model: str | None = None,
) -> EvalReport:
    """Run every case, `jobs` at a time; `on_result` hears each as it ends (in order of
    ending, with how many have ended). Results come back in the cases' order."""
    started = time.monotonic()
    results: dict[str, CaseResult] = {}
    with (
        tempfile.TemporaryDirectory(prefix="gk-eval-cache-") as tmp,
        ThreadPoolExecutor(max_workers=max(1, jobs)) as pool,
    ):
        if runner is None:
            cache = warm_cache(Path(tmp)) if cases else None
            runner = functools.partial(run_case, cache=cache, model=model)
        futures = {pool.submit(runner, case, timeout): case for case in cases}
        from concurrent.futures import as_completed

        for future in as_completed(futures):
            case = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # a harness bug on one case must not hide the others
                logger.exception("eval case %s crashed the harness", case.name)
                result = CaseResult(
                    case,
                    case.expectations[0].describe(),
                    "crash",
                    False,
                    None,
                    (f"crash: {exc!r}",),
                    0.0,
                    error=repr(exc),
                )
            results[case.name] = result
            if on_result is not None:
                on_result(len(results), result)
    ordered = tuple(results[c.name] for c in cases)
    return EvalReport(ordered, time.monotonic() - started)


def junit_xml(report: EvalReport) -> str:
    """The report as JUnit XML: one testcase per case, a failure for each that failed."""
    import xml.etree.ElementTree as ET

    suite = ET.Element(
        "testsuite",
        name="groundskeeper-eval",
        tests=str(len(report.results)),
        failures=str(report.failed),
        errors="0",
        time=f"{report.seconds:.3f}",
    )
    for r in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=r.case.category,
            name=r.case.name,
            time=f"{r.seconds:.3f}",
        )
        props = ET.SubElement(case, "properties")
        for key, value in (
            ("kind", r.case.kind),
            ("expected", r.expected),
            ("actual", r.actual),
            ("caught_by", r.caught_by or ""),
        ):
            ET.SubElement(props, "property", name=key, value=value)
        if not r.passed:
            failure = ET.SubElement(case, "failure", message="; ".join(r.problems))
            failure.text = "\n".join(r.problems)
    root = ET.Element("testsuites", tests=str(len(report.results)), failures=str(report.failed))
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
