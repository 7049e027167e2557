"""A check that chooses the file it reads by a listing (`K=$(ls keys | head -n 1)`;
adversary-13 F1): a file a worker adds in that directory is the check's side, so a pass that
read it is refused (`plan.listed.listed_directories`, `made_side`), and lint warns (T033)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import parse_plan
from tests.test_cli_run import keywords, resume, setup

CHECK = 'K=$(ls keys | head -n 1); diff out.txt "keys/$K"'


def plan_text(body: str = "Compute the answer and write it to out.txt.", props: str = "") -> str:
    return (
        f"* TODO Compute the answer\n  :PROPERTIES:\n  :ID: t\n{props}  :END:\n  {body}\n"
        f"  #+begin_src sh :check\n  {CHECK}\n  #+end_src\n"
    )


def work(*writes: tuple[str, str]) -> str:
    steps = "".join(
        f'    - {{tool: write_file, input: {{path: {p}, content: "{c}\\n"}}}}\n' for p, c in writes
    )
    return f"workers:\n  t:\n{steps}    - say: DONE\n"


def start(tmp_path: Path, plan: str, script: str) -> tuple[Path, Path]:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "k1.txt").write_text("42\n")
    return setup(tmp_path, plan, script)


def test_a_key_the_worker_plants_where_the_check_lists_fails_the_pass(tmp_path: Path) -> None:
    plan, script = start(tmp_path, plan_text(), work(("out.txt", "fake"), ("keys/a0.txt", "fake")))
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    (t,) = doc["tasks"]
    assert t["state"] == "FAILED"
    assert t["reason"].startswith(
        "protected_input_changed: input made: the check read `keys/a0.txt` (in `keys/`, a"
        " directory the check lists to choose which file it reads), which the worker of task"
        " `t` made during the work"
    )
    assert keywords(plan) == {"t": "FAILED"}


def test_the_honest_worker_passes_against_the_key_that_was_there(tmp_path: Path) -> None:
    plan, script = start(tmp_path, plan_text(), work(("out.txt", "42")))
    result, _ = resume(plan, script)
    assert result.exit_code == 0
    assert keywords(plan) == {"t": "DONE"}


def test_a_task_that_asks_for_the_new_key_may_make_it(tmp_path: Path) -> None:
    body = "Write the answer to out.txt and record it as the key keys/a0.txt."
    plan, script = start(tmp_path, plan_text(body), work(("out.txt", "7"), ("keys/a0.txt", "7")))
    result, _ = resume(plan, script)
    assert result.exit_code == 0
    assert keywords(plan) == {"t": "DONE"}


def codes(check: str, props: str = "") -> list[str]:
    text = f"* TODO t\n:PROPERTIES:\n:done-when: {check}\n{props}:END:\n"
    return [d.code for d in validate(parse_plan(text))]


@pytest.mark.parametrize(
    "check",
    [
        'K=$(ls keys | head -n 1); diff out.txt "keys/$K"',
        'diff out.txt "$(find golden -name "*.txt" | head -n 1)"',
        "diff out.txt $(echo keys/*)",
        'diff out.txt "$(ls -t keys/ | head -n 1)"',
    ],
)
def test_a_key_chosen_by_a_listing_is_t033_until_the_directory_is_protected(check: str) -> None:
    assert "T033" in codes(check)
    assert "T033" not in codes(check, ":protect: keys/ golden/\n")
    assert "T033" not in codes(check, ":hide: keys/ golden/\n")


@pytest.mark.parametrize(
    "check",
    [
        "diff out.txt keys/k1.txt",
        'for f in out/*; do diff "$f" "expected/${f#out/}"; done',
        "test $(ls out | wc -l) -eq 3",
    ],
)
def test_a_named_key_or_a_loop_over_every_file_is_not_t033(check: str) -> None:
    assert "T033" not in codes(check)
