"""Groundskeeper reads every corpus plan as Emacs does, before and after a run writes its
verdicts back. The goldens are Emacs's own view (`make org-goldens`); no Emacs is needed here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundskeeper.plan.org import load_plan
from tests.org_corpus.corpus import (
    AFTER,
    GOLDEN,
    corpus_plans,
    golden_view,
    org_view,
    scripted_run,
)

PLANS = corpus_plans()


def test_the_corpus_covers_the_constructs() -> None:
    names = {p.stem for p in PLANS}
    assert len(names) >= 40
    for prefix in ("block-", "drawer-", "keywords-", "comment-", "cookies-", "tags-",
                   "priority-", "spaces-", "ambiguous-", "line-endings-", "example-"):  # fmt: skip
        assert any(name.startswith(prefix) for name in names), prefix
    assert {p.name for p in AFTER.glob("*.org")} == {p.name for p in PLANS}


@pytest.mark.parametrize("plan", PLANS, ids=[p.stem for p in PLANS])
def test_groundskeeper_reads_the_plan_as_emacs_does(plan: Path) -> None:
    assert org_view(load_plan(plan)) == golden_view(GOLDEN / f"{plan.stem}.json")


@pytest.mark.parametrize("plan", PLANS, ids=[p.stem for p in PLANS])
def test_after_write_back_emacs_still_agrees(plan: Path, tmp_path: Path) -> None:
    after = AFTER / plan.name
    assert scripted_run(plan, tmp_path) == after.read_bytes()
    golden = GOLDEN / f"{plan.stem}.after.json"
    assert org_view(load_plan(after)) == golden_view(golden)
    # org's own statistics update would change no line the run wrote
    assert json.loads(golden.read_text(encoding="utf-8"))["stale_cookie_lines"] == []
