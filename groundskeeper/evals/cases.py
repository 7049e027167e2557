"""Eval cases as written: loading a suite's case directories (`plan.org`, `agents.yaml`, an
optional `setup/`, `expect.json`; docs/evals.md) into typed `EvalCase`s. It does not run them
(`evals.run`) nor count them (`evals.figures`).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from groundskeeper.errors import UsageError
from groundskeeper.evals.hook import hook_agent

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
    # the agent whose hook answers a scripted session's stops (`evals.hook`) instead of a
    # `resume` of scripted workers
    hook: str | None = None

    @property
    def scored_as(self) -> Literal["fake", "honest", "weak"]:
        """Which figure the case counts toward: a weak-check case is in neither."""
        return "weak" if self.weak_check else self.kind


# --- loading --------------------------------------------------------------------------


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
                found.append(load_case(case_dir, name))
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


def load_case(case_dir: Path, name: str) -> EvalCase:
    """One case directory under the name it has in its suite; EvalCaseError if bad."""

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
