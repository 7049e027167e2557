"""Running one eval case as a user would: in its own temporary directory and
`$GROUNDSKEEPER_HOME`, the same `groundskeeper resume` (or goal run) in a subprocess with only
the flags the case names, then judging the report against `expect.json`. A crash or a timeout
is a failed, unscored result with its named reason. Scheduling many cases is `evals.sweep`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from groundskeeper.evals.cases import EvalCase
from groundskeeper.evals.figures import CaseResult, caught_by
from groundskeeper.evals.fork_client import ForkLost, ForkServer, ForkUnavailable
from groundskeeper.evals.hook import HookSessionFault, play_session

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0


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
    """Compile the sandbox (box.wasm, and QuickJS beside it) once into `directory`/home/cache,
    for each case's home to start with its own copy of (as a user's home would after a first
    run); None if box.wasm's compile fails. CPython for the sandbox is set up first when
    this installation lacks it (an installed wheel's first eval)."""
    set_up_cpython()
    home = directory / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    _seed(home / "cache")
    # QuickJS too (script validation: lint's `:validate workflow`, `workflow-script`
    # contracts): compiling it costs each case that needs it ~2 s of CPU, copying it ~5 ms.
    # Both compile at once, each on a core (their cache key is made once, by either).
    script = directory / "warm.js"
    script.write_text("const workflow = { producers: { p: { schedule: { cron: '* * * * *' },"
                      " handler() {} } } };\n")  # fmt: skip
    with ThreadPoolExecutor(max_workers=1) as beside:
        quickjs = beside.submit(_warm, ("validate-script", str(script)), home, directory)
        box = _warm(("sh", "--", "true"), home, directory)
        if not quickjs.result():
            logger.warning("could not compile QuickJS ahead; each case that needs it compiles it")
    if not box:
        logger.warning("could not compile the sandbox ahead; each case compiles its own")
        return None
    cache = home / "cache"
    return cache if cache.is_dir() else None


def _seed(cache: Path) -> None:
    """The suite's cache started with the user's own compiled box.wasm and QuickJS, when the
    user's cache holds them for this wasmtime (~2.4 s of compiling before the first case):
    the entries and the cache's key, copied. Nothing is trusted for being copied: a case
    loads an entry only when its MAC holds under that key, and compiles it otherwise, as in
    an empty cache. Whatever cannot be read is simply not copied."""
    from groundskeeper.record.keys import groundskeeper_home
    from groundskeeper.sandbox import quickjs, wasi
    from groundskeeper.sandbox.result import SandboxError

    mine = groundskeeper_home() / "cache"
    try:
        names = [wasi.entry_name(wasi.BOX_WASM, "box")]
        with contextlib.suppress(SandboxError):
            names.append(wasi.entry_name(quickjs.find_module(), quickjs.CACHE_STEM))
    except OSError:
        return
    if not all((mine / name).is_file() for name in [wasi.CACHE_KEY_FILE, names[0]]):
        return
    cache.mkdir(mode=0o700, exist_ok=True)
    for name in [wasi.CACHE_KEY_FILE, *names]:
        with contextlib.suppress(OSError):
            _copy_private(mine / name, cache / name)


def _copy_private(source: Path, target: Path) -> None:
    """`source`'s bytes into a new file `target` readable by this user alone; a link or
    anything but a regular file at `source` is not followed."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return
        data = handle.read()
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(out, "wb") as handle:
        handle.write(data)


def set_up_cpython() -> None:
    """CPython for the sandbox set up here, once, before any case runs, when this installation
    lacks it: otherwise the first case to run python3 sets it up (about a minute) while the
    others wait for it, each against its own time limit. When it cannot be set up, the reason
    is said here, and each case that runs python3 fails with it."""
    from groundskeeper.sandbox.cpython import NotSetUp
    from groundskeeper.sandbox.cpython_setup import ensure

    try:
        ensure()
    except NotSetUp as error:
        logger.warning("%s; the cases that run python3 will fail", error)


def _warm(args: tuple[str, ...], home: Path, directory: Path) -> bool:
    try:
        subprocess.run(_groundskeeper(*args), env=_env(home), cwd=directory,
                       capture_output=True, timeout=60, check=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return True


# What the cases' commands import (resume, ledger verify, a goal run, approve, a json-schema
# contract): a command forked from the server finds them imported; others it imports itself.
FORK_PRELOAD = (
    "groundskeeper.cli.run_cmd",
    "groundskeeper.cli.ledger_cmd",
    "groundskeeper.cli.goal_cmd",
    "groundskeeper.cli.approve_cmd",
    "groundskeeper.cli.interrupts",
    "groundskeeper.cli.agent_cmd",  # a hook case's `agent setup` and `agent seal`
    "groundskeeper.agents.gate",
    "groundskeeper.supervisor.runner",
    "groundskeeper.supervisor.graph",
    "groundskeeper.models.scripted",
    "groundskeeper.sandbox.shell",
    "groundskeeper.record.telemetry",
    "groundskeeper.review.timeline",
    # imported by nearly every resume after the fork (~20 ms of each one's CPU): lint, the
    # record index, the inputs a check compares against, a signing key's serialisation
    "groundskeeper.plan.lint",
    "groundskeeper.plan.compared",
    "groundskeeper.record.record_index",
    "groundskeeper.sandbox.command_options",
    "groundskeeper.sandbox.inputs",
    "cryptography.hazmat.primitives.serialization",
    "pathspec",
    "langgraph.graph",
    "langgraph.types",
    "langgraph.checkpoint.sqlite",
    "jsonschema",
)


def start_fork_server() -> ForkServer | None:
    """The server the cases' commands are forked from (`evals.fork_client`): each is still a
    process of its own, with its own home, directory and output, but it does not start
    Python and import groundskeeper again. None when it cannot start."""
    try:
        return ForkServer(_env(Path(os.devnull)), FORK_PRELOAD)  # the home is per command
    except OSError as error:
        logger.warning("no fork server (%s): each command starts Python", error)
        return None


def run_case(
    case: EvalCase,
    timeout: float = DEFAULT_TIMEOUT,
    cache: Path | None = None,
    model: str | None = None,
    forks: ForkServer | None = None,
) -> CaseResult:
    """Run one case in its own temporary directory and `$GROUNDSKEEPER_HOME`: `runs`
    resumes in a row, then (if asked) `ledger verify`. A crash or timeout fails it.
    `cache` (from `warm_cache`) is copied into the case's home, never shared. `model` (a
    `--model` spec) replaces the case's scripted `agents.yaml` as the worker. `forks`
    (from `start_fork_server`) forks each command instead of starting Python for it."""
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
            # without the bytecode an installer compiled beside the case's own files (pip
            # byte-compiles an installed suite's .py files): it is no part of the case
            shutil.copytree(case.path / "setup", run_dir, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
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
                report = _gated_run(case, root, run_dir, agents, model, env, deadline, forks)
            if case.hook is not None:
                tasks = [e.task for e in case.expectations]
                report = play_session(
                    case.hook, run_dir, agents, tasks, env, deadline,
                    lambda cmd, env, cwd, left: _execute(cmd, env, cwd, left, forks),
                )  # fmt: skip
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
                    forks=forks,
                )
            ledger = None
            if case.ledger_ok:
                ledger = _run_json(
                    _groundskeeper("ledger", "verify", str(run_dir / "plan.org"), "--json"),
                    env,
                    root,
                    deadline,
                    forks=forks,
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
    forks: ForkServer | None = None,
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
              env, root, deadline, ok=(0, 1, 3), forks=forks)  # fmt: skip
    answer = ["--revise", str(approve.get("note"))] if approve["answer"] == "revise" else []
    answer = answer or [f"--{approve['answer']}"]
    _run_json(_groundskeeper("approve", str(run_dir), "--task", approve["task"], *answer,
                             "--json"), env, root, deadline, ok=(0,), forks=forks)  # fmt: skip
    for path, text in (approve.get("then_write") or {}).items():
        (run_dir / path).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / path).write_text(text, encoding="utf-8")
    return _run_json(_groundskeeper("run", "--resume", str(run_dir), "--json"), env, root,
                     deadline, ok=(0, 1, 3), forks=forks)  # fmt: skip


def _run_json(
    cmd: list[str],
    env: dict[str, str],
    cwd: Path,
    deadline: float,
    ok: tuple[int, ...] = (0, 1, 3),  # 3: tasks wait at approval gates (never DONE)
    forks: ForkServer | None = None,
) -> dict[str, Any]:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _CaseFault("timeout", "timeout: the case ran past its time limit")
    try:
        done = _execute(cmd, env, cwd, left, forks)
    except subprocess.TimeoutExpired:
        raise _CaseFault(
            "timeout", f"timeout: `{' '.join(cmd[3:5])}` ran past the case's time limit"
        ) from None
    except ForkLost as lost:
        raise _CaseFault("crash", f"crash: {lost}") from None
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


def _execute(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float, forks: ForkServer | None
) -> subprocess.CompletedProcess[str]:
    """The `groundskeeper` command `cmd`, forked from `forks` when it can be, else a new
    Python: a process of its own either way, with the same arguments, environment and cwd."""
    if forks is not None:
        with contextlib.suppress(ForkUnavailable):
            return forks.run(cmd[3:], env=env, cwd=cwd, timeout=timeout)
    return subprocess.run(
        cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


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
