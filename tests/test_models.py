"""The scripted model: script lookup, per-task cursors across attempts, and bad scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.models import load_model
from groundskeeper.models.model import ModelRequest, ModelUnavailableError, ScriptError
from groundskeeper.models.scripted import ScriptedModel

SCRIPT = """
author:
  - "* TODO Write report\\n"
workers:
  gather:
    - tool: write_file
      input: {path: a.txt, content: "x"}
    - say: "DONE: first"
    - tool: sh
      input: {cmd: "cat a.txt"}
    - say: "DONE: second"
  "Write report":
    - say: "DONE by title"
  "*":
    - say: "DONE by star"
"""


def ask(model: ScriptedModel, task_id: str, title: str = "T") -> tuple[str, str, list[str]]:
    turn = model.respond(ModelRequest("sys", [], [], task_id=task_id, task_title=title))
    return turn.stop_reason, turn.text, [b["name"] for b in turn.tool_uses]


def test_bad_scripts_name_the_file_and_entry(tmp_path: Path) -> None:
    cases = {
        "not: [yaml": "not valid YAML",
        "- a list\n": "a model script is a mapping",
        "workers: {}\nextra: 1\n": "unknown top-level key(s) extra",
        "workers:\n  t1:\n    - tool: rm_rf\n": "workers.'t1'[0]: unknown tool 'rm_rf'",
        "workers:\n  t1:\n    - say: hi\n    - sai: typo\n": "workers.'t1'[1]: unknown key(s) sai",
        "workers:\n  t1:\n    - {say: hi, tool: sh}\n": "workers.'t1'[0]: mixes",
        "workers:\n  t1: DONE\n": "workers.'t1': expected a list",
        "workers:\n  t1:\n    - tool: sh\n      input: [1]\n": "`input:` must be a mapping",
    }
    for text, expected in cases.items():
        path = tmp_path / "script.yaml"
        path.write_text(text)
        with pytest.raises(ScriptError) as caught:
            ScriptedModel.from_file(path)
        assert str(path) in str(caught.value)
        assert expected in str(caught.value), (text, str(caught.value))
    assert issubclass(ScriptError, UsageError)


def test_missing_script_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read the model script"):
        ScriptedModel.from_file(tmp_path / "nope.yaml")


def test_lookup_by_id_then_title_then_star() -> None:
    model = ScriptedModel.from_yaml(SCRIPT)
    assert ask(model, "gather", "Gather things") == ("tool_use", "", ["write_file"])
    assert ask(model, "some/id", "Write report") == ("end_turn", "DONE by title", [])
    assert ask(model, "other", "Other") == ("end_turn", "DONE by star", [])
    assert model.author == ("* TODO Write report\n",)


def test_tool_use_blocks_are_shaped_like_anthropic() -> None:
    model = ScriptedModel.from_yaml(SCRIPT)
    turn = model.respond(ModelRequest("s", [], [], task_id="gather", task_title="g"))
    (block,) = turn.content
    assert block["type"] == "tool_use"
    assert block["name"] == "write_file"
    assert block["input"] == {"path": "a.txt", "content": "x"}
    assert block["id"].startswith("toolu_")
    assert turn.to_message() == {"role": "assistant", "content": [block]}


def test_cursor_is_per_task_and_survives_attempts() -> None:
    model = ScriptedModel.from_yaml(SCRIPT)
    # two tasks on the "*" script each start at its beginning
    assert ask(model, "a")[1] == "DONE by star"
    assert ask(model, "b")[1] == "DONE by star"
    # attempt 1 of gather: tool, say; attempt 2 continues: tool, say
    assert ask(model, "gather") == ("tool_use", "", ["write_file"])
    assert ask(model, "gather")[1] == "DONE: first"
    assert ask(model, "gather") == ("tool_use", "", ["sh"])
    assert ask(model, "gather")[1] == "DONE: second"


def test_running_out_of_turns_repeats_the_last_claim() -> None:
    model = ScriptedModel.from_yaml(SCRIPT)
    for _ in range(4):
        ask(model, "gather")
    assert ask(model, "gather") == ("end_turn", "DONE: second", [])
    assert ask(model, "gather") == ("end_turn", "DONE: second", [])
    silent = ScriptedModel.from_yaml("workers:\n  t:\n    - tool: list_files\n")
    ask(silent, "t")
    assert ask(silent, "t") == ("end_turn", "", [])


def test_no_script_for_the_task_claims_nothing() -> None:
    model = ScriptedModel.from_yaml("workers:\n  only: [{say: DONE}]\n")
    assert ask(model, "elsewhere") == ("end_turn", "", [])


def test_load_model_specs(tmp_path: Path) -> None:
    script = tmp_path / "w.yaml"
    script.write_text("workers: {}\n")
    model = load_model(f"scripted:{script}")
    assert model.name == f"scripted:{script}"
    with pytest.raises(ModelUnavailableError, match="ANTHROPIC_API_KEY is not set"):
        load_model("anthropic:claude-sonnet-4-5")  # the autouse fixture unsets the key
    with pytest.raises(ModelUnavailableError, match="unknown backend 'openai'"):
        load_model("openai:gpt")
    with pytest.raises(ModelUnavailableError, match="expected `scripted:FILE`"):
        load_model("scripted")
    assert issubclass(ModelUnavailableError, GroundskeeperError)
