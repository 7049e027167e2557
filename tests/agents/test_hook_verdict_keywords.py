"""The breaker's FAILED and the plan's keywords are one reading (adversary-12 F7): a plan
whose `#+TODO:` line cannot show FAILED is refused at `agent setup` with the fix named; a
plan sealed so anyway (an older setup) gets no FAILED sealed that its headline cannot show;
and `audit` names a sealed verdict the headline does not show. Each through the command
lines `agent setup` writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.agents.gated import ledger_steps
from tests.agents.test_hook_session_bound import gk, hook, set_up

NO_FAILED = "#+TODO: TODO | DONE CANCELLED\n"
WITH_FAILED = "#+TODO: TODO | DONE CANCELLED FAILED\n"


def keywords(work: Path, line: str) -> None:
    plan = work / "plan.org"
    plan.write_text(line + plan.read_text().split("\n", 1)[1])


def audit(work: Path) -> tuple[int, str]:
    done = gk(work, "audit", str(work / "plan.org"))
    return done.returncode, done.stdout + done.stderr


def test_agent_setup_refuses_a_plan_whose_keywords_cannot_show_failed(work: Path) -> None:
    keywords(work, NO_FAILED)
    refused = gk(work, "agent", "setup", "claude-code", "--plan", str(work / "plan.org"))
    assert refused.returncode == 2, refused.stderr
    assert (
        "plan.org: error: outline: the #+TODO line has no FAILED after `|`: the hook's breaker"
        " seals and writes FAILED when it stops a session, and a headline could not show it;"
        " add FAILED after `|` (e.g. `#+TODO: TODO | DONE FAILED`, keeping your own states)"
        " [H002]" in refused.stderr
    ), refused.stderr
    assert not (work / ".groundskeeper" / "plan.org" / "claude-code.settings.json").exists()
    # the honest twin: the fix named; the breaker then writes what it seals, and audit agrees
    keywords(work, WITH_FAILED)
    set_up(work, "--max-blocks", "1")
    stopped = hook(work)
    assert stopped.json["continue"] is False, stopped
    assert "FAILED: `notes`, `count`" in stopped.json["stopReason"]
    assert "* FAILED Write the notes" in (work / "plan.org").read_text()
    status, said = audit(work)
    assert status == 0, said


def test_the_breaker_on_a_plan_sealed_without_failed_seals_no_state_it_cannot_write(
    work: Path,
) -> None:
    # sealed as an older `agent setup` sealed it: the seal function itself, no refusal
    keywords(work, WITH_FAILED)
    set_up(work, "--max-blocks", "1")
    keywords(work, NO_FAILED)
    seal = "from pathlib import Path; from groundskeeper.agents.gate import seal_plan;"
    seal += " seal_plan(Path('plan.org').absolute(), None, 'agent setup claude-code')"
    subprocess.run([sys.executable, "-c", seal], cwd=work, check=True, capture_output=True)
    stopped = hook(work)
    assert stopped.json["continue"] is False, stopped
    reason = stopped.json["stopReason"]
    assert "its stop is NOT a pass. FAILED: none sealed or written (the #+TODO line has no" in (
        reason
    ), reason
    assert not [b for s, b in ledger_steps(work) if s == "state"]
    assert "* TODO Write the notes" in (work / "plan.org").read_text()
    assert "cannot write FAILED" not in stopped.stderr
    status, said = audit(work)
    assert status == 0, said
    # and the next stop is still judged, and stopped again (never a pass)
    again = hook(work, session="s-2")
    assert again.json["continue"] is False, again


def test_audit_names_a_sealed_failed_the_headline_does_not_show(work: Path) -> None:
    keywords(work, WITH_FAILED)
    set_up(work, "--max-blocks", "1")
    assert hook(work).json["continue"] is False
    plan = work / "plan.org"
    # the headline set back by hand: the sealed FAILED is not what the plan shows
    plan.write_text(plan.read_text().replace("* FAILED Write the notes", "* TODO Write the notes"))
    status, said = audit(work)
    assert status == 1, said
    assert (
        "state-mismatch: `Write the notes` is TODO in the plan; the ledger sealed it FAILED"
        " (set back by hand, or never written? the next run judges it again)" in said
    ), said
    assert "`Count them`" not in said
    # and where the plan's keywords have no FAILED at all, audit says so
    keywords(work, NO_FAILED)
    plan.write_text(plan.read_text().replace("* FAILED Count them", "* TODO Count them"))
    status, said = audit(work)
    assert status == 1, said
    assert (
        "`Count them` is TODO in the plan; the ledger sealed it FAILED (the plan's #+TODO line"
        " has no FAILED, so it was never written)" in said
    ), said
