"""`groundskeeper mcp`: an MCP server (the official `mcp` 2.x SDK, `MCPServer`, stdio) that
lets an agent ask about the plan and re-run a task's sealed check — and nothing more.

It owns the tools' shapes: `list_tasks`, `get_task`, `run_check`, `lint_plan`,
`verify_ledger`. Nothing here marks a task DONE on the agent's word: `run_check` re-runs the
check as sealed, in the sandbox, and seals the verdict; enforcement stays in the hook
(`agents.gate`). Protected and hidden inputs are named, never shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundskeeper.acceptance.check import SealedCheck, run_check, told
from groundskeeper.agents.gate import (
    HookRecord,
    check_body,
    find_plan,
    hides_inputs,
    open_plan_record,
    verified_steps,
)
from groundskeeper.agents.seal import HookFailure, LedgerView, aliases_of_hidden, fingerprint
from groundskeeper.errors import GroundskeeperError
from groundskeeper.plan.org import load_plan
from groundskeeper.plan.spec import compile_plan

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["build_server"]

INSTRUCTIONS = (
    "groundskeeper supervises this session: a task is done only when its acceptance check"
    " passes in groundskeeper's sandbox, and your stop is checked by a hook. Use run_check to"
    " see what a check says now; nothing you call here marks a task done."
)


class PlanTools:
    """The tools, as plain methods (the server wraps them; tests may call them directly)."""

    def __init__(self, plan: Path | None, workdir: Path | None = None) -> None:
        self.plan_path = find_plan(plan, str(Path.cwd())).absolute()
        self.workdir = workdir

    def _spec(self) -> tuple[Any, Any]:
        plan = load_plan(self.plan_path)
        return plan, compile_plan(plan)

    def list_tasks(self) -> list[dict[str, Any]]:
        plan, spec = self._spec()
        return [
            {
                "task_id": t.task_id,
                "title": t.title,
                "state": t.heading.keyword or "",
                "line": t.heading.line,
                "has_check": t.check is not None,
                "open": t.heading.keyword not in plan.done_states,
            }
            for t in spec
        ]

    def get_task(self, task_id: str) -> dict[str, Any]:
        _, spec = self._spec()
        for task in spec:
            if task.task_id == task_id:
                check = SealedCheck.seal(task.check) if task.check is not None else None
                return {
                    "task_id": task.task_id,
                    "title": task.title,
                    "state": task.heading.keyword or "",
                    "line": task.heading.line,
                    "check": check.text if check is not None else None,
                    "check_sha256": check.sha256 if check is not None else None,
                    "protected": list(task.protect),
                    "hidden": list(task.hide),
                }
        raise HookFailure("task", f"no task `{task_id}` in {self.plan_path}")

    def run_check(self, task_id: str) -> dict[str, Any]:
        """Re-run the task's check as the plan was sealed; seal the verdict."""
        control, key = open_plan_record(self.plan_path)
        view = LedgerView.read(verified_steps(control, self.plan_path), "")
        plan, spec = self._spec()
        root = (self.workdir or self.plan_path.parent).resolve()
        task = next((t for t in spec if t.task_id == task_id), None)
        if task is None:
            raise HookFailure("task", f"no task `{task_id}` in {self.plan_path}")
        if task.check is None:
            return {
                "task_id": task_id,
                "verdict": "NO_CHECK",
                "code": None,
                "reason": "the task has no acceptance check",
                "output": "",
                "seq": None,
            }
        sealed = SealedCheck.seal(task.check)
        guarded = [p for p, _ in view.seal.guarded] if view.seal is not None else []
        now = fingerprint(plan, root, guarded, view.seal)
        refusals = [
            ("plan_changed", "the plan changed since the session started: ", changes)
            for changes in [now.changes_from(view.seal) if view.seal is not None else []]
        ] + [
            ("hidden_alias", "a hidden input is reachable by another name: ", aliases)
            for aliases in [aliases_of_hidden(root, [p for p, _ in now.hidden])]
        ]
        for code, why, found in refusals:
            if found:
                return {
                    "task_id": task_id,
                    "verdict": "FAIL",
                    "code": code,
                    "reason": why + "; ".join(found),
                    "output": "",
                    "seq": None,
                }
        result = run_check(sealed, root)
        record = HookRecord(
            control, key, {"kind": "mcp", "tool": "run_check", "plan": str(self.plan_path)}
        )
        withhold = hides_inputs(plan)
        seq = record.seal("check", check_body(task_id, 0, result, phase="mcp", withhold=withhold))
        record.seal("run-end", {"ok": result.passed, "states": [], "tampers": 0})
        return {
            "task_id": task_id,
            "verdict": result.verdict,
            # `told`: in a plan that hides inputs, pass or fail and nothing else goes back
            "code": None if withhold else result.code or None,
            "reason": told(result.reason, hides=withhold) if result.reason else "",
            "output": told(result.output, hides=withhold) if result.output else "",
            "check_sha256": result.check_sha256,
            "seq": seq,
        }

    def lint_plan(self) -> dict[str, Any]:
        from groundskeeper.plan.lint import validate

        found = validate(load_plan(self.plan_path))
        return {
            "ok": not any(d.level == "error" for d in found),
            "diagnostics": [d.to_json() for d in found],
        }

    def verify_ledger(self) -> dict[str, Any]:
        from groundskeeper.record.control import ControlDir
        from groundskeeper.record.keys import trusted_keys
        from groundskeeper.record.ledger import verify_ledger

        ledger = ControlDir.for_plan(self.plan_path).ledger
        if not ledger.exists():
            return {"ok": False, "lines": 0, "findings": [], "note": "no ledger yet"}
        report = verify_ledger(ledger, trusted_keys())
        return {
            "ok": report.ok,
            "lines": report.lines,
            "findings": [f.to_json() for f in report.findings],
        }


def build_server(plan: Path | None, workdir: Path | None = None) -> MCPServer:
    from mcp.server.mcpserver import MCPServer

    tools = PlanTools(plan, workdir)
    server: MCPServer = MCPServer("groundskeeper", instructions=INSTRUCTIONS)

    @server.tool()
    def list_tasks() -> list[dict[str, Any]]:
        """Every task of the plan: id, title, state, line, whether it has a check."""
        return tools.list_tasks()

    @server.tool()
    def get_task(task_id: str) -> dict[str, Any]:
        """One task: its state, its check's text and hash, the patterns it protects and the
        ones it hides (by name: what a hidden file holds is never shown)."""
        return tools.get_task(task_id)

    @server.tool()
    def run_check(task_id: str) -> dict[str, Any]:
        """Re-run the task's sealed check in groundskeeper's sandbox now: the verdict, the
        reason, the output (withheld when the plan hides inputs) and the ledger sequence
        number it was sealed at. It marks nothing done."""
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            return tools.run_check(task_id)
        except GroundskeeperError as exc:  # the reason goes back: "plan in use", "no task", …
            raise ToolError(str(exc)) from exc

    @server.tool()
    def lint_plan() -> dict[str, Any]:
        """The plan's rung-1 diagnostics."""
        return tools.lint_plan()

    @server.tool()
    def verify_ledger() -> dict[str, Any]:
        """Does the plan's signed ledger verify?"""
        return tools.verify_ledger()

    return server
