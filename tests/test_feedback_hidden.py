"""What goes back to a worker in a plan that hides inputs (`check.told`): pass or fail, and
which check or contract it was, never a message, a status or what was printed — a hidden JSON
schema's `const` in a contract's message (F4), a byte of a held-out file in an exit status the
worker's own code chose (F11). Without hidden inputs, all of it goes back as before. (The hook
and MCP paths: tests/agents/test_hook_hidden.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli_run import setup, task
from tests.test_paths_cli import _run_recorded

SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"const": "secret-9317"}, "color": {"enum": ["teal-4471"]}},
}
GUESSES = (
    "workers:\n  ans:\n"
    + '    - {tool: write_file, input: {path: out.json, content: \'{"answer": "guess"}\'}}\n'
    + "    - say: DONE\n"
) * 1 + (
    '    - {tool: write_file, input: {path: out.json, content: \'{"answer": "guess2"}\'}}\n'
    "    - say: DONE\n"
)


def _schema_plan(tmp_path: Path, **props: str) -> tuple[Path, Path]:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "answer.json").write_text(json.dumps(SCHEMA))
    return setup(
        tmp_path,
        task(
            "Find the answer",
            "ans",
            "grep -q answer out.json",
            contract="json-schema schemas/answer.json out.json",
            max_attempts="2",
            **props,
        ),
        GUESSES,
    )


def _told(heard: list[str]) -> str:
    """Every text the worker was sent, decoded (what it reads, not its JSON escapes)."""
    return "\n".join(
        str(block.get("text", ""))
        for request in heard
        for message in json.loads(request)
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if isinstance(block, dict)
    )


def test_a_hidden_schema_s_values_never_reach_the_worker(tmp_path: Path) -> None:
    plan, script = _schema_plan(tmp_path, hide="schemas/answer.json")
    model, rows = _run_recorded(plan, script)
    assert rows["ans"].state == "FAILED"
    told = _told(model.heard)
    assert "secret-9317" not in told and "teal-4471" not in told
    assert (
        "- json-schema schemas/answer.json out.json: failed (the rest is not shown: this run"
        " hides inputs from workers" in told
    )
    assert "C005" not in told
    assert "secret-9317" in rows["ans"].reason  # the record (and the report) keep it


def test_a_visible_schema_s_message_goes_back(tmp_path: Path) -> None:
    plan, script = _schema_plan(tmp_path, protect="schemas/answer.json")
    model, rows = _run_recorded(plan, script)
    assert rows["ans"].state == "FAILED"
    told = _told(model.heard)
    assert "C005: json-schema schemas/answer.json out.json: `out.json` does not match" in told
    assert "'secret-9317' was expected" in told


#: the worker's program exits with the held-out file's byte: a channel of 8 bits an attempt
LEAKY = (
    "import sys\\nsys.exit(open('held/answer.txt','rb').read()[0] if len(sys.argv) > 1 else 0)\\n"
)


def _status_plan(tmp_path: Path, **props: str) -> tuple[Path, Path]:
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "answer.txt").write_text(":secret\n")  # ':' is 58
    return setup(
        tmp_path,
        task("Run it", "s", "python3 prog.py held/answer.txt", max_attempts="2", **props),
        "workers:\n  s:\n"
        + f'    - {{tool: write_file, input: {{path: prog.py, content: "{LEAKY}"}}}}\n'
        + "    - say: DONE\n" * 2,
    )


def test_an_exit_status_never_carries_a_hidden_byte_back(tmp_path: Path) -> None:
    plan, script = _status_plan(tmp_path, hide="held/")
    model, rows = _run_recorded(plan, script)
    assert rows["s"].state == "FAILED"
    told = _told(model.heard)
    assert "status 58" not in told and "exited with status" not in told
    assert "python3 prog.py held/answer.txt → failed (the rest is not shown" in told
    assert "exited with status 58" in rows["s"].reason  # the record keeps it


def test_without_hidden_inputs_the_status_goes_back(tmp_path: Path) -> None:
    plan, script = _status_plan(tmp_path, protect="held/")
    model, rows = _run_recorded(plan, script)
    assert rows["s"].state == "FAILED"
    assert "`python3 prog.py held/answer.txt` exited with status 58" in _told(model.heard)
