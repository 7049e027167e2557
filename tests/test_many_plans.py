"""Many plans at once: `resume PLAN…` and `run --resume DIR…` run each plan as its own
process (its own lock, ledger and checkpoint), report every plan, and exit with the worst
code; a plan that fails does not stop the others."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from groundskeeper.cli import main

PLAN = (
    "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"
    "* TODO Greet\n  :PROPERTIES:\n  :ID: greet\n  :done-when: grep -qx hi out.txt\n  :END:\n"
)
HONEST = [{"tool": "write_file", "input": {"path": "out.txt", "content": "hi\n"}}, {"say": "DONE"}]
LIAR = [{"say": "DONE"}]


def invoke(*args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(main, list(args))
    try:
        return result, json.loads(result.stdout)
    except ValueError:
        return result, {}


def plan_dir(root: Path, name: str, turns: list[dict[str, Any]]) -> tuple[Path, Path]:
    folder = root / name
    folder.mkdir()
    (folder / "plan.org").write_text(PLAN)
    script = root / f"{name}.yaml"
    script.write_text(yaml.safe_dump({"workers": {"greet": turns}}))
    return folder / "plan.org", script


def ledger_runs(folder: Path) -> int:
    steps = folder / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    return sum(json.loads(line)["step"] == "run-start" for line in steps.read_text().splitlines())


def test_several_plans_need_ray_only_with_backend_ray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    a, script = plan_dir(tmp_path, "a", HONEST)
    b, _ = plan_dir(tmp_path, "b", HONEST)
    result, _ = invoke("resume", str(a), str(b), "--model", f"scripted:{script}", "--backend",
                       "ray")  # fmt: skip
    assert result.exit_code == 2
    assert "pip install 'groundskeeper[ray]'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "a" / ".groundskeeper").exists()


def test_several_plans_each_run_in_their_own_process_and_the_worst_exit_wins(
    tmp_path: Path,
) -> None:
    good, script = plan_dir(tmp_path, "good", HONEST)
    bad, _ = plan_dir(tmp_path, "bad", LIAR)
    # one script for both: `greet` is honest for both, so make the liar's plan use its own
    (tmp_path / "bad" / "plan.org").write_text(PLAN.replace(":ID: greet", ":ID: lie"))
    script.write_text(yaml.safe_dump({"workers": {"greet": HONEST, "lie": LIAR}}))
    result, doc = invoke("resume", str(good), str(bad), "--model", f"scripted:{script}",
                         "--jobs", "2", "--json")  # fmt: skip
    assert result.exit_code == 1, result.stderr
    assert [p["plan"] for p in doc["plans"]] == [str(good), str(bad)]
    assert [p["exit_code"] for p in doc["plans"]] == [0, 1]
    states = [[t["state"] for t in p["report"]["tasks"]] for p in doc["plans"]]
    assert states == [["DONE"], ["FAILED"]]
    assert doc["ok"] is False and doc["exit_code"] == 1
    for folder in (tmp_path / "good", tmp_path / "bad"):  # each its own ledger, verified
        assert ledger_runs(folder) == 1
        verify = CliRunner().invoke(main, ["ledger", "verify", str(folder), "--json"])
        assert verify.exit_code == 0, verify.stdout
    assert "[2/2]" in result.stderr and "2 plans, each in its own process" in result.stderr


def test_run_resume_takes_several_goal_run_directories(tmp_path: Path) -> None:
    mission = tmp_path / "mission.yaml"
    mission.write_text(yaml.safe_dump({"author": [PLAN], "workers": {"greet": HONEST}}))
    for name in ("one", "two"):
        result, _ = invoke("run", f"goal {name}", "--model", f"scripted:{mission}", "--dir",
                           str(tmp_path / name), "--json")  # fmt: skip
        assert result.exit_code == 0, result.stderr
    result, doc = invoke("run", "--resume", str(tmp_path / "one"), str(tmp_path / "two"),
                         "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [p["plan"] for p in doc["plans"]] == [str(tmp_path / "one"), str(tmp_path / "two")]
    assert [p["exit_code"] for p in doc["plans"]] == [0, 0]
    assert all(p["report"] is not None for p in doc["plans"])


def test_a_goal_of_several_words_must_be_quoted() -> None:
    result, _ = invoke("run", "write", "a", "haiku")
    assert result.exit_code == 2
    assert 'quote it (`groundskeeper run "write a haiku"`)' in result.stderr
