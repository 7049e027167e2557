"""Fix loops that end: `normalize_failure` (hypothesis properties), the breaker and the run's
attempt budget as values; then through the CLI — a worker failing the same way with varying
volatile parts is stopped at --breaker, one making progress is not, and --max-total-attempts
leaves the tasks it did not reach resumable, with each stop's code in the report, the sealed
`state` step and telemetry."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from groundskeeper.acceptance.loops import AttemptBudget, Breaker, normalize_failure
from groundskeeper.cli import main
from tests.test_cli_run import control, keywords, resume, setup, states, steps, task

# --- normalize_failure ---------------------------------------------------------------------------

# what varies between two runs of the same failure, one generator per kind the brief names
_hex = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)
_tmp_tail = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=6, max_size=10)
VOLATILE: dict[str, st.SearchStrategy[str]] = {
    "sentinel": _hex.map(lambda h: f"__WB_CHECK_OK_{h}__"),
    "temp": _tmp_tail.map(lambda t: f"/tmp/tmp{t}/out.txt"),
    "temp-name": _tmp_tail.map(lambda t: f"tmp{t}"),
    "ms": st.integers(0, 99_999).map(lambda n: f"{n} ms"),
    "seconds": st.floats(0, 999, allow_nan=False).map(lambda f: f"{f:.2f}s"),
    "hash": st.text(alphabet="0123456789abcdef", min_size=40, max_size=40).map(
        lambda h: "a1" + h[2:]  # a digit and a letter at least, as a git hash has
    ),
    "temp-line": st.tuples(_tmp_tail, st.integers(1, 9999)).map(
        lambda t: f"/tmp/tmp{t[0]}/x.py:{t[1]}"
    ),
    "temp-frame": st.tuples(_tmp_tail, st.integers(1, 9999)).map(
        lambda t: f'File "/tmp/{t[0]}/x.py", line {t[1]}'
    ),
    "pid": st.integers(2, 4_194_304).map(lambda n: f"pid {n}"),
    "clock": st.times().map(lambda t: t.strftime("%H:%M:%S")),
}
# substance: words without hex letters (so no word can pass for a hash), none of the volatile
# rules' keywords, and small numbers not followed by a unit
_WORDS = st.text(alphabet="ghijklnoqrtuvwxyz", min_size=2, max_size=9).filter(
    lambda w: w not in {"in", "took", "line", "lines", "col", "ln", "pid", "thread", "tmp"}
)
# line numbers that point into the work or the check are substance: a failure that moved is
# progress
_LINES = st.one_of(
    st.integers(1, 9999).map(lambda n: f"line {n}"),
    st.integers(1, 9999).map(lambda n: f"main.py:{n}"),
    st.tuples(st.integers(1, 999), st.integers(1, 99)).map(lambda t: f"data.txt:{t[0]}:{t[1]}"),
)
_SUBSTANCE = st.one_of(_WORDS, st.integers(0, 99).map(str), _LINES)


@st.composite
def failure_pair(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """A failure's substance tokens, and two fillings of its volatile slots."""
    kinds = draw(st.lists(st.sampled_from(sorted(VOLATILE)), min_size=1, max_size=5))
    substance = draw(st.lists(_SUBSTANCE, min_size=len(kinds) + 1, max_size=len(kinds) + 1))
    first = [draw(VOLATILE[k]) for k in kinds]
    second = [draw(VOLATILE[k]) for k in kinds]
    return substance, first, second


def fill(substance: list[str], volatile: list[str]) -> str:
    parts = [substance[0]]
    for value, word in zip(volatile, substance[1:], strict=True):
        parts += ["—", value, "—", word]
    return " ".join(parts)


@settings(max_examples=120, deadline=None)
@given(failure_pair())
def test_failures_differing_only_in_volatile_parts_normalize_equal(
    pair: tuple[list[str], list[str], list[str]],
) -> None:
    substance, first, second = pair
    assert normalize_failure(fill(substance, first)) == normalize_failure(fill(substance, second))


@settings(max_examples=120, deadline=None)
@given(failure_pair(), st.data())
def test_failures_differing_in_substance_do_not(
    pair: tuple[list[str], list[str], list[str]], data: st.DataObject
) -> None:
    substance, first, second = pair
    at = data.draw(st.integers(0, len(substance) - 1))
    other = data.draw(_SUBSTANCE.filter(lambda w: w != substance[at]))
    changed = [*substance[:at], other, *substance[at + 1 :]]
    assert normalize_failure(fill(substance, first)) != normalize_failure(fill(changed, second))


@settings(max_examples=120, deadline=None)
@given(st.text())
def test_normalizing_twice_changes_nothing(text: str) -> None:
    once = normalize_failure(text)
    assert normalize_failure(once) == once


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (  # a check's reason and output, as the runner compares them
            "nonzero_status\ncheck line 2: `grep -q ok out.txt` exited with status 1\nbuilt in"
            " 120 ms at 2026-11-23T13:40:00.123Z",
            "nonzero_status\ncheck line 2: `grep -q ok out.txt` exited with status 1\nbuilt in"
            " 98 ms at 2026-11-24T09:01:59.002Z",
        ),
        ('File "/tmp/tmpq3x9a1/t.py", line 12, in f', 'File "/tmp/tmpz8k2m7/t.py", line 40, in f'),
        ("/tmp/tmpq3x9a1/t.c:12:4: error: x", "/tmp/tmpz8k2m7/t.c:7:1: error: x"),
        ("commit 3f2a9c1 failed (0x7ffd1234)", "commit 9b8e7d6 failed (0x7ffd9999)"),
        ("python[4242]: killed in 1.5 seconds", "python[77]: killed in 0.25 seconds"),
        ("wrote .plan.org.k2j3h4x9.tmp", "wrote .plan.org.zz81qq7w.tmp"),
        ("  spaced \t out  \n\n\n twice ", "spaced out\ntwice"),
    ],
)
def test_volatile_examples_normalize_equal(one: str, other: str) -> None:
    assert normalize_failure(one) == normalize_failure(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("expected 3 lines, got 2", "expected 3 lines, got 4"),
        ("`grep -q Pro notes.md` exited with status 1", "`grep -q Hobby notes.md` exited 1"),
        ("errors: 3 in 4 files", "errors: 3 in 5 files"),
        ("decade added facade", "decade added façade"),  # hex-letter words are words
        ("nonzero_status\nexit 1", "deadline\nexit 1"),
        # where it failed: the check's line, the input file's line, the diagnostic's place
        ("check line 2: `grep -q ok out.txt`", "check line 3: `grep -q ok out.txt`"),
        ("data.txt:2: expected 3 fields", "data.txt:4: expected 3 fields"),
        ("main.c:12:4: error: x", "main.c:12:9: error: x"),
        ("Expecting value: line 3 column 5", "Expecting value: line 4 column 5"),
    ],
)
def test_substance_examples_stay_apart(one: str, other: str) -> None:
    assert normalize_failure(one) != normalize_failure(other)


def test_normalized_text_names_what_it_replaced() -> None:
    assert normalize_failure(
        "check line 12: cat /tmp/tmpab12cd/x took 3.5 s, pid 99, __WB_CHECK_OK_00ff__"
    ) == ("check line 12: cat <tmp> took <duration>, pid <pid>, <sentinel>")


# --- the breaker and the budget as values ---------------------------------------------------------


def test_the_breaker_trips_at_its_limit_and_a_different_failure_resets_it() -> None:
    breaker = Breaker(3)
    assert breaker.failed("boom after 1 ms") is False
    assert breaker.failed("boom after 2 ms") is False
    assert breaker.failed("other") is False  # the streak starts again
    assert breaker.failed("boom after 3 ms") is False
    assert breaker.failed("boom after 4 ms") is False
    assert breaker.failed("boom after 5 ms") is True
    assert breaker.streak == 3


def test_a_breaker_below_two_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        Breaker(1)


def test_the_budget_refuses_past_its_limit_and_latches() -> None:
    budget = AttemptBudget(2)
    assert (budget.take(), budget.take(), budget.spent, budget.refused) == (True, True, True, False)
    assert budget.take() is False
    assert (budget.taken, budget.refused) == (2, True)
    unlimited = AttemptBudget()
    assert all(unlimited.take() for _ in range(1000)) and not unlimited.spent


# --- through the CLI --------------------------------------------------------------------------

CHECK = "cat log.txt && tail -n 1 log.txt | grep -qx ok"


def log_turns(*contents: str) -> str:
    """A worker that writes log.txt and claims DONE, once per attempt."""
    lines = ["workers:", "  w:"]
    for content in contents:
        quoted = json.dumps(content)
        lines.append(f"    - {{tool: write_file, input: {{path: log.txt, content: {quoted}}}}}")
        lines.append('    - say: "DONE: fixed it"')
    return "\n".join(lines) + "\n"


def stop_rows(plan: Path) -> list[tuple[str, str, int, str | None]]:
    conn = sqlite3.connect(control(plan) / "_telemetry.db")
    try:
        return conn.execute(
            "SELECT task_id, state, attempt, stop FROM task_events ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def test_the_breaker_stops_a_worker_failing_the_same_way_with_varying_volatile_parts(
    tmp_path: Path,
) -> None:
    logs = [f"FAILED after {ms} ms in /tmp/tmp{tag} (pid {pid})\n"
            for ms, tag, pid in [(812, "q3x9a1", 4411), (790, "z8k2m7", 4532),
                                 (805, "w1e5r0", 4650), (777, "b7n4v2", 4788),
                                 (801, "c0c0c0", 4901), (799, "d1d1d1", 5012)]]  # fmt: skip
    plan, script = setup(tmp_path, task("Loop", "w", CHECK, max_attempts="6"), log_turns(*logs))
    result, doc = resume(plan, script, "--breaker", "3")
    assert result.exit_code == 1
    (report,) = doc["tasks"]
    assert (report["state"], report["attempts"], report["stop"]) == ("FAILED", 3, "breaker")
    assert report["reason"].startswith(
        "breaker: the same failure 3 times in a row (volatile parts such as timings, temp names"
        " and pids aside), so attempt 4 of 6 was not started; the failure:"
        " nonzero_status: "
    )
    # three claims, three checks: the loop really ended at the breaker
    assert [c["attempt"] for c in steps(plan, "claim")] == [1, 2, 3]
    (start,) = steps(plan, "run-start")
    assert (start["breaker"], start["max_total_attempts"]) == (3, None)
    assert [(s["to"], s.get("stop")) for s in steps(plan, "state")] == [("FAILED", "breaker")]
    assert stop_rows(plan) == [("w", "FAILED", 3, "breaker")]
    assert keywords(plan) == {"w": "FAILED"}
    shown = CliRunner().invoke(main, ["ledger", "show", str(tmp_path)])
    assert "TODO → FAILED (stop: breaker)" in shown.stdout


def test_failures_that_differ_in_substance_are_not_a_loop(tmp_path: Path) -> None:
    logs = ["compile: FAILED after 812 ms\n", "compile: ok\nlink: FAILED after 790 ms\n",
            "compile: ok\nlink: ok\ntest: FAILED after 5 ms\n", "compile: ok\nok\n"]  # fmt: skip
    plan, script = setup(tmp_path, task("Progress", "w", CHECK, max_attempts="6"), log_turns(*logs))
    result, doc = resume(plan, script, "--breaker", "2")
    assert result.exit_code == 0, doc
    assert states(doc) == {"w": ("DONE", 4, True)}
    assert doc["tasks"][0]["stop"] is None
    assert [(s["to"], s.get("stop")) for s in steps(plan, "state")] == [("DONE", None)]


FIELDS = (
    'awk \'NF != 3 { print FILENAME ":" NR ": expected 3 fields"; bad = 1 }'
    " END { exit bad }' data.txt"
)


def data_turns(*contents: str) -> str:
    return log_turns(*contents).replace("path: log.txt", "path: data.txt")


def test_a_failure_that_moved_to_another_line_of_the_input_is_progress(tmp_path: Path) -> None:
    data = ["a b c\nd e\ng h i\nj k l\n", "a b c\nd e f\ng h i\nj k\n", "a b c\nd e f\ng h i\n"]
    plan, script = setup(tmp_path, task("Fields", "w", FIELDS, max_attempts="3"), data_turns(*data))
    result, doc = resume(plan, script, "--breaker", "2")
    assert result.exit_code == 0, doc
    assert states(doc) == {"w": ("DONE", 3, True)}


def test_the_same_line_failing_again_with_other_noise_trips_the_breaker(tmp_path: Path) -> None:
    data = ["a b c\nd e\n# took 12 ms\n", "a b c\nd e\n# took 31 ms\n", "a b c\nd e f\n"]
    plan, script = setup(tmp_path, task("Fields", "w", FIELDS, max_attempts="3"), data_turns(*data))
    _, doc = resume(plan, script, "--breaker", "2")
    (report,) = doc["tasks"]
    assert (report["state"], report["attempts"], report["stop"]) == ("FAILED", 2, "breaker")


def test_max_attempts_ends_a_loop_before_the_breaker_and_says_so(tmp_path: Path) -> None:
    logs = ["FAILED after 1 ms\n", "FAILED after 2 ms\n"]
    plan, script = setup(tmp_path, task("Default", "w", CHECK), log_turns(*logs))
    _, doc = resume(plan, script)  # :max-attempts: 2 (default) < --breaker 3 (default)
    (report,) = doc["tasks"]
    assert (report["state"], report["attempts"], report["stop"]) == ("FAILED", 2, "max-attempts")
    assert report["reason"].startswith("nonzero_status: ")  # the failure itself, no prefix
    assert stop_rows(plan) == [("w", "FAILED", 2, "max-attempts")]


def test_a_breaker_below_two_is_a_usage_error(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("T", "w", CHECK), log_turns("x\n"))
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--breaker", "1"]
    )
    assert result.exit_code == 2
    assert "--breaker" in result.stderr and "x>=2" in result.stderr


def cap_plan(tmp_path: Path) -> tuple[Path, Path]:
    failing = "workers:\n  '*': [{say: DONE}]\n"
    return setup(
        tmp_path,
        task("A", "a", "test -s a.txt") + task("B", "b", "test -s b.txt")
        + task("C", "c", "test -s c.txt"),
        failing,
    )  # fmt: skip


def test_the_total_cap_leaves_the_tasks_it_stops_resumable(tmp_path: Path) -> None:
    plan, script = cap_plan(tmp_path)
    result, doc = resume(plan, script, "--max-total-attempts", "3", "--max-parallel", "1")
    assert result.exit_code == 1
    by_id: dict[str, dict[str, Any]] = {t["id"]: t for t in doc["tasks"]}
    assert [(t["state"], t["attempts"], t["stop"]) for t in by_id.values()] == [
        ("FAILED", 2, "max-attempts"),  # its two attempts, both failed
        ("TODO", 1, "attempt-cap"),  # one attempt, then the cap: left as it was
        ("TODO", 0, "attempt-cap"),  # never started
    ]
    assert by_id["b"]["reason"].startswith(
        "attempt-cap: the run had started its 3 attempt(s) (--max-total-attempts 3); after 1"
        " failed attempt(s) this task is left resumable, never DONE; its last failure:"
        " nonzero_status: "
    )
    assert by_id["c"]["reason"] == (
        "attempt-cap: the run had started its 3 attempt(s) (--max-total-attempts 3); this task"
        " was not started and is left resumable"
    )
    assert doc["attempt_cap"] == "attempt-cap: 3 attempt(s) started"
    assert doc["continue_with"] is not None and "resume" in doc["continue_with"]
    (diagnostic,) = [d for d in doc["diagnostics"] if d["code"] == "I010"]
    assert diagnostic["level"] == "error"
    assert "2 task(s) are left resumable" in diagnostic["message"]
    assert keywords(plan) == {"a": "FAILED", "b": "TODO", "c": "TODO"}
    claims = [(c["task_id"], c["attempt"]) for c in steps(plan, "claim")]
    assert claims == [("a", 1), ("a", 2), ("b", 1)]
    assert [(s["task_id"], s["from"], s["to"], s.get("stop")) for s in steps(plan, "state")] == [
        ("a", "TODO", "FAILED", "max-attempts"),
        ("b", "TODO", "TODO", "attempt-cap"),
        ("c", "TODO", "TODO", "attempt-cap"),
    ]
    assert [t for t, *_ in steps_started(plan)] == ["a", "b"]  # c was never started
    assert stop_rows(plan) == [
        ("a", "FAILED", 2, "max-attempts"),
        ("b", "TODO", 1, "attempt-cap"),
        ("c", "TODO", 0, "attempt-cap"),
    ]
    # resumable: the next run works on b and c again (each gets its attempts anew)
    _, again = resume(plan, script)
    assert states(again) == {
        "a": ("FAILED", 2, True),
        "b": ("FAILED", 2, True),
        "c": ("FAILED", 2, True),
    }
    assert again["attempt_cap"] is None and again["continue_with"] is None


def steps_started(plan: Path) -> list[tuple[str, str]]:
    return [(s["task_id"], s["kind"]) for s in steps(plan, "task-start")]


def test_a_cap_that_is_never_reached_changes_nothing(tmp_path: Path) -> None:
    plan, script = cap_plan(tmp_path)
    _, doc = resume(plan, script, "--max-total-attempts", "6")
    assert [(t["state"], t["stop"]) for t in doc["tasks"]] == [("FAILED", "max-attempts")] * 3
    assert doc["attempt_cap"] is None
    assert not [d for d in doc["diagnostics"] if d["code"] == "I010"]


def test_an_older_telemetry_database_gains_the_stop_column(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("T", "w", CHECK), log_turns("x\n", "y\n"))
    resume(plan, script)
    db = control(plan) / "_telemetry.db"
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE task_events DROP COLUMN stop")  # as a database before it
    conn.commit()
    conn.close()
    plan.write_text(plan.read_text().replace("FAILED T", "TODO T"))
    result, doc = resume(plan, script)
    assert doc["tasks"][0]["stop"] == "max-attempts", result.stderr
    assert stop_rows(plan)[-1] == ("w", "FAILED", 2, "max-attempts")


def test_a_goal_run_stopped_by_the_cap_executes_again_on_resume(tmp_path: Path) -> None:
    """`run --max-total-attempts`: `run --resume DIR` runs the plan again from execute, so
    the tasks the cap left get their attempts (the author is not asked again)."""
    outline = (
        "* TODO One\n  :PROPERTIES:\n  :ID: one\n  :done-when: grep -qx hi one.txt\n  :END:\n"
        "* TODO Two\n  :PROPERTIES:\n  :ID: two\n  :done-when: grep -qx hi two.txt\n  :END:\n"
    )
    honest = [{"tool": "write_file", "input": {"path": "{}.txt", "content": "hi\n"}},
              {"say": "DONE"}]  # fmt: skip
    workers = {
        name: [{**honest[0], "input": {"path": f"{name}.txt", "content": "hi\n"}}, honest[1]]
        for name in ("one", "two")
    }
    mission = tmp_path / "mission.yaml"
    mission.write_text(json.dumps({"author": [outline], "workers": workers}))
    work = tmp_path / "work"
    first = CliRunner().invoke(main, ["run", "two greetings", "--model", f"scripted:{mission}",
                                      "--dir", str(work), "--max-total-attempts", "1",
                                      "--max-parallel", "1", "--breaker", "4",
                                      "--json"])  # fmt: skip
    assert first.exit_code == 1, first.output
    ledger = control(work / "plan.org") / "_steps.jsonl"
    starts = [json.loads(line)["body"] for line in ledger.read_text().splitlines()
              if json.loads(line)["step"] == "run-start"]  # fmt: skip
    plan_run = [s for s in starts if s.get("kind") != "goal"]
    assert [(s["breaker"], s["max_total_attempts"]) for s in plan_run] == [(4, 1)]
    doc = json.loads(first.stdout)
    assert [(t["id"], t["state"], t["stop"]) for t in doc["tasks"]] == [
        ("one", "DONE", None),
        ("two", "TODO", "attempt-cap"),
    ]
    again = CliRunner().invoke(main, ["run", "--resume", str(work), "--json"])
    assert again.exit_code == 0, again.output
    resumed = json.loads(again.stdout)
    assert [(t["id"], t["state"]) for t in resumed["tasks"]] == [("one", "DONE"), ("two", "DONE")]
    assert [o["attempt"] for o in resumed["outlines"]] == [1]  # the author was asked once


def test_parallel_tasks_never_start_more_attempts_than_the_cap(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        "".join(task(f"T{i}", f"t{i}", f"test -s {i}.txt", max_attempts="3") for i in range(6)),
        "workers:\n  '*': [{say: DONE}]\n",
    )
    _, doc = resume(plan, script, "--max-total-attempts", "4", "--max-parallel", "4")
    assert sum(t["attempts"] for t in doc["tasks"]) == 4
    assert len(steps(plan, "claim")) == 4
    assert all(t["stop"] == "attempt-cap" for t in doc["tasks"] if t["state"] == "TODO")
    assert {t["state"] for t in doc["tasks"]} <= {"TODO", "FAILED"}


def test_the_breaker_counts_a_claim_that_fails_its_evidence_the_same_way(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Evidence", "w", "test -s a.txt", max_attempts="5", evidence="count:int"),
        "workers:\n  w:\n"
        + "    - {tool: claim_done, input: {summary: done, evidence: {count: three}}}\n" * 4,
    )
    _, doc = resume(plan, script, "--breaker", "2")
    (report,) = doc["tasks"]
    assert (report["state"], report["attempts"], report["stop"]) == ("FAILED", 2, "breaker")
    assert "the failure: wrong evidence: count: must be int, not str" in report["reason"]
