"""The org corpus: plans covering every construct org and groundskeeper must read alike, the
run that writes verdicts back into them, and groundskeeper's view in the shape of Emacs's.

`make org-goldens` (make_goldens.py) asks Emacs for its view of each plan and of each plan
after the run; `test_org_goldens` holds groundskeeper to those goldens without Emacs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.models import load_model
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import Plan, load_plan
from groundskeeper.supervisor.runner import Runner, RunOptions

CORPUS = Path(__file__).parent
PLANS = CORPUS / "plans"  # NAME.org, as people write them
AFTER = CORPUS / "after"  # NAME.org, as the scripted run leaves them
GOLDEN = CORPUS / "golden"  # NAME.json and NAME.after.json: Emacs's view of each
ORG_VIEW = CORPUS / "org_view.el"
# every worker claims DONE and does nothing: checks decide (true passes, the rest fail)
WORKERS = 'workers:\n  "*":\n    - say: "DONE"\n'


def corpus_plans() -> list[Path]:
    return sorted(PLANS.glob("*.org"))


def scripted_run(source: Path, workdir: Path) -> bytes:
    """The plan's bytes after a run with the scripted workers (unchanged if lint refuses it)."""
    plan = workdir / "plan.org"
    plan.write_bytes(source.read_bytes())
    script = workdir / "workers.yaml"
    script.write_text(WORKERS)

    # the corpus is about reading and writing back: its checks are toys (`true`, `false`)
    # that lint rightly calls vacuous (T005, T009); every other rule still decides the run
    def toys_allowed(plan: Plan) -> list[Diagnostic]:
        return [d for d in validate(plan) if d.code not in ("T005", "T009")]

    # a corpus plan may show FAILED/PARTIAL headlines with no ledger behind them: a lost
    # record to a run, which the corpus starts over knowingly (`--forget-record`)
    options = RunOptions(max_parallel=1, forget_record=True)
    Runner(load_plan(plan), model=load_model(f"scripted:{script}"),
           options=options).run(lint=toys_allowed)  # fmt: skip
    return plan.read_bytes()


def org_view(plan: Plan) -> dict[str, Any]:
    """What `org_view.el` reports, as groundskeeper reads it (without the cookie check)."""
    keywords = (*plan.active_states, *plan.done_states)
    return {
        "todo_keywords": sorted(keywords),
        "done_keywords": sorted(plan.done_states),
        "headlines": [
            {
                "line": h.line,
                "level": h.level,
                "todo": h.keyword,
                "priority": h.priority,
                "title": h.title,
                "tags": list(h.tags),
                "id": h.get_property("ID"),
                "done_when": h.get_property("done-when"),
                "commented": h.commented,
            }
            for h in plan.walk()
        ],
    }


def golden_view(golden: Path) -> dict[str, Any]:
    """A golden in `org_view`'s shape (keyword order is org's own bookkeeping: sorted)."""
    data: dict[str, Any] = json.loads(golden.read_text(encoding="utf-8"))
    return {
        "todo_keywords": sorted(data["todo_keywords"]),
        "done_keywords": sorted(data["done_keywords"]),
        "headlines": data["headlines"],
    }
