"""An eval's results and their figures: one case's `CaseResult`, the named reason that caught
a fake (`caught_by`), recall with its Wilson interval and the false-positive rate with its
upper bound, per category, per model and overall, and JUnit XML. It runs nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundskeeper.evals.cases import EvalCase

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal
STAND_IN = "stand-in"  # the model label of each case's own scripted agents.yaml


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
    model: str = STAND_IN  # the worker: a `--model` spec, or each case's own stand-in
    repeat: int = 1  # which of a sweep's `--repeat K` runs of the case this is (1-based)
    executions: int = 1  # how often the case ran for this result (an engine's retries too)

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
            "model": self.model,
            "repeat": self.repeat,
            "executions": self.executions,
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


# --- classifying ----------------------------------------------------------------------

# verdicts whose reason is a sentence rather than `code: …`
_PHRASES = (
    ("a child's work was undone", "rollup: a child no longer passes"),
    ("a child's check no longer holds after", "rollup: a child no longer passes"),
    ("not every child task is DONE", "rollup: children not DONE"),
    ("no child task is DONE", "rollup: children not DONE"),
    ("no acceptance check", "require-checks"),
    ("answer refused (stale", "gate: stale answer refused"),
    ("waiting for approval", "gate: waiting for a person"),
    ("aborted at its approval gate", "gate: aborted"),
    ("judged work changed since its verdict", "judge: work changed since its verdict"),
    ("approved work changed since its approval", "gate: work changed since its approval"),
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


# --- the suite ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalReport:
    results: tuple[CaseResult, ...]
    seconds: float
    summary: dict[str, Any] = field(default_factory=dict)
    # a sweep's own figures: models, repeat, backend, the suite ledger, sealed, skipped
    # (sealed by an earlier driver), duplicates (executions past one per case key)
    sweep: dict[str, Any] = field(default_factory=dict)

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
            "models": by_model(self.results),
            "sweep": dict(self.sweep),
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


def by_model(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The figures of each model's runs (every case, every repeat), side by side, in the
    order the models first appear."""
    models = list(dict.fromkeys(r.model for r in results))
    out: dict[str, Any] = {}
    for model in models:
        rows = [r for r in results if r.model == model]
        figures = summarize(rows)
        out[model] = {
            "runs": len(rows),
            "passed": sum(r.passed for r in rows),
            "failed": sum(not r.passed for r in rows),
            "overall": figures["overall"],
            "caught_by": figures["caught_by"],
            "fakes_refused_by_tools": figures["fakes_refused_by_tools"],
        }
    return out
