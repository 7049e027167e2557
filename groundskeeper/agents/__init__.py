"""Gating the agents people already run (Claude Code, Codex, Gemini CLI, Copilot, Cursor).

It owns their hook dialects (`dialects`), the decision a hook seals (`gate`), the plan as
sealed for a session (`seal`) and the set-up that puts the hook where the agent cannot edit
it (`setup`). It reads the plan's spec, runs checks through `acceptance.check` in the sandbox
and seals through `record.ledger`; no rung, the record or the supervisor imports it.
"""
