"""Adversarial scripted models: a bad script is a ScriptError naming the file and entry (never a
traceback), and no script shape makes a claim the script did not say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.models.model import ModelRequest, ScriptError
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.supervisor.worker import WorkerSession, WorkerTask


def ask(model: ScriptedModel, task_id: str = "t") -> tuple[str, str]:
    turn = model.respond(ModelRequest("sys", [], [], task_id=task_id, task_title="T"))
    return turn.stop_reason, turn.text


@pytest.mark.parametrize(
    ("script", "where"),
    [
        ("workers:\n  t:\n    - {tool: [sh], input: {cmd: x}}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {tool: {a: 1}}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {tool: sh, input: []}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {tool: sh, input: 0}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {tool: sh, input: 'cmd'}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {tool: sh, input: {1: x}}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {tool: sh, input: {cmd: 2024-01-01}}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {tool: sh, input: {cmd: !!binary aGk=}}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {say: DONE, tool: sh}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {say: [DONE]}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {say: null}\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - DONE\n", "workers.'t'[0]"),
        ("workers:\n  t:\n    - {}\n", "workers.'t'[0]"),
        ("workers:\n  t: DONE\n", "workers.'t'"),
        ("workers:\n  t: {say: DONE}\n", "workers.'t'"),
        ("workers:\n  t: [{say: DONE}]\n  t: [{say: FAILED}]\n", "duplicate key 't'"),
        ("workers: [1, 2]\n", "workers"),
        ("author: [1]\n", "author"),
        ("- a\n- b\n", "mapping"),
        ("workers: {t: [{say: x}]}\nextra: 1\n", "extra"),
        ("\t:\n", "YAML"),
    ],
)
def test_bad_scripts_are_script_errors(script: str, where: str) -> None:
    with pytest.raises(ScriptError) as caught:
        ScriptedModel.from_yaml(script, source="s.yaml")
    assert str(caught.value).startswith("s.yaml: ")
    assert where in str(caught.value), str(caught.value)


def test_unreadable_script_files_are_script_errors(tmp_path: Path) -> None:
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00workers")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path in (tmp_path / "missing.yaml", tmp_path, binary, fifo, Path("/dev/zero")):
        with pytest.raises(ScriptError) as caught:
            ScriptedModel.from_file(path)
        assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "script", ["", "workers: {}\n", "workers:\n  t: []\n", "workers:\n  other: [{say: DONE}]\n"]
)
def test_empty_or_unmatched_scripts_claim_nothing(script: str) -> None:
    model = ScriptedModel.from_yaml(script)
    assert ask(model) == ("end_turn", "")
    assert ask(model) == ("end_turn", "")


def test_a_script_of_tools_only_never_claims(tmp_path: Path) -> None:
    model = ScriptedModel.from_yaml("workers:\n  t:\n    - {tool: list_files}\n")
    box = Toolbox(tmp_path, tmp_path / "plan.org")
    outcome = WorkerSession(model, WorkerTask("t", "T", "", None), box).attempt()
    assert (outcome.claim, outcome.claims_done) == ("", False)


def test_say_is_kept_verbatim_not_stripped() -> None:
    model = ScriptedModel.from_yaml("workers:\n  t:\n    - say: ' not DONE'\n")
    assert ask(model) == ("end_turn", " not DONE")
