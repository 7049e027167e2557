"""Adversary-8 F5 and F10: an `output-of` quote judged against what the deciding run really
printed. A run whose stdout went to a file (`CMD > out/report.txt`) printed what the file held
right after it — read back by the toolbox and sealed by hash (`stdout_file`), never what the
file holds later nor what was there before (`>>`); and a status the sandbox's one table calls
a "no" (grep's 1: no line matched) is a run that answered. Through the CLI, fakes beside
their honest twins."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import resume, setup, steps
from tests.test_evidence_programs import claim, sh, task

LINTER = (
    "import sys\n"
    "rows = open(sys.argv[1]).read().splitlines()[1:]\n"
    "bad = sum(1 for r in rows if not r.split(',')[1].strip().isdigit())\n"
    "print(f'{sys.argv[1]}: {len(rows)} rows, {bad} problems')\n"
)
CLEAN = "region,amount\nN,10\nS,20\nE,5\n"
DIRTY = "region,amount\nN,10\nS,x\nE,?\n"
LINT = "python3 tools/lint.py out/clean.csv"
EVIDENCE = f'"lint:output-of:{LINT}"'
QUOTE = {"lint": "out/clean.csv: 3 rows, 0 problems"}
CHECK = "test -s out/lint.txt"


def _seed(root: Path) -> None:
    (root / "tools").mkdir()
    (root / "tools" / "lint.py").write_text(LINTER)
    (root / "data").mkdir()
    (root / "data" / "clean.csv").write_text(CLEAN)
    (root / "data" / "dirty.csv").write_text(DIRTY)
    (root / "out").mkdir()


def _run(root: Path, evidence: str, check: str, turns: str) -> dict[str, object]:
    plan, script = setup(root, "#+PROTECT: tools/*.py\n" + task(evidence, check),
                         "workers:\n  t:\n" + turns)  # fmt: skip
    _, doc = resume(plan, script)
    (row,) = doc["tasks"]
    return dict(row)


def test_a_stale_quote_is_refused_when_the_deciding_run_wrote_otherwise_to_a_file(
    tmp_path: Path,
) -> None:
    # the laundering a "redirected runs do not count" rule would let through: a clean run
    # printed the quote, the last run (on dirty data, saved to a file) printed 2 problems
    _seed(tmp_path)
    turns = (
        sh("cp data/clean.csv out/clean.csv")
        + sh(LINT)
        + sh("cp data/dirty.csv out/clean.csv")
        + sh(f"{LINT} > out/lint.txt")
        + claim(QUOTE)
    )
    row = _run(tmp_path, EVIDENCE, CHECK, turns)
    assert row["state"] == "FAILED"
    assert row["reason"] == (
        "false evidence: lint: the record contradicts 'out/clean.csv: 3 rows, 0 problems':"
        f" `{LINT} > out/lint.txt` (exited 0) did not print it (its output went to"
        " `out/lint.txt`, which the record kept) (the last of 2 runs of the pattern, which"
        " decides)"
    )


def test_a_quote_planted_before_an_appending_run_is_refused(tmp_path: Path) -> None:
    # `>>` keeps what was there: the file is not what the command printed
    _seed(tmp_path)
    turns = (
        sh("cp data/dirty.csv out/clean.csv")
        + sh("echo 'out/clean.csv: 3 rows, 0 problems' > out/lint.txt")
        + sh(f"{LINT} >> out/lint.txt")
        + claim(QUOTE)
    )
    row = _run(tmp_path, EVIDENCE, CHECK, turns)
    assert row["state"] == "FAILED"
    assert str(row["reason"]).startswith("false evidence: lint: the record contradicts")


def test_the_honest_twin_that_saves_its_report_with_a_redirection_is_done(tmp_path: Path) -> None:
    # F5 as the adversary ran it: print, then save the report with `>`, then quote it
    _seed(tmp_path)
    turns = (
        sh("cp data/clean.csv out/clean.csv")
        + sh(LINT)
        + sh(f"{LINT} > out/lint.txt")
        + claim(QUOTE)
    )
    row = _run(tmp_path, EVIDENCE, CHECK, turns)
    assert (row["state"], row["reason"]) == ("DONE", None), row
    plan = tmp_path / "plan.org"
    saved = [c for c in steps(plan, "tool-call") if c.get("stdout_file")]
    (call,) = saved
    assert call["stdout_file"]["path"] == "out/lint.txt"
    assert len(call["stdout_file"]["sha256"]) == 64


def test_only_redirected_the_quote_holds_too(tmp_path: Path) -> None:
    _seed(tmp_path)
    turns = sh("cp data/clean.csv out/clean.csv") + sh(f"{LINT} > out/lint.txt") + claim(QUOTE)
    row = _run(tmp_path, EVIDENCE, CHECK, turns)
    assert (row["state"], row["reason"]) == ("DONE", None), row


# -- F10: a status that means "none" --------------------------------------------------------


def _log(root: Path, text: str) -> None:
    (root / "build.log").write_text(text)


ERRORS = '"errors:output-of:grep -c ERROR build.log"'


def test_a_grep_count_of_zero_exiting_1_is_a_true_quote(tmp_path: Path) -> None:
    _log(tmp_path, "compiled\nlinked\n")
    turns = sh("grep -c ERROR build.log") + claim({"errors": "0"})
    row = _run(tmp_path, ERRORS, "test -s build.log", turns)
    # DONE on the quote; the check itself passed before any work, which the verdict says
    assert row["state"] == "DONE", row
    assert str(row["reason"]).startswith("warning: red-first: passes before any work"), row


def test_a_grep_that_could_not_read_its_file_vouches_for_nothing(tmp_path: Path) -> None:
    # status 2 is an error, not a "no": what it printed is its complaint, not a count
    _log(tmp_path, "compiled\n")
    turns = sh("grep -c ERROR build.log missing.log") + claim({"errors": "build.log:0"})
    row = _run(tmp_path, '"errors:output-of:grep -c ERROR build.log*"', "test -s build.log",
               turns)  # fmt: skip
    assert row["state"] == "FAILED"
    assert "printed it but exited 2" in str(row["reason"]), row["reason"]


def test_a_status_1_of_a_command_the_table_does_not_know_is_a_failure(tmp_path: Path) -> None:
    (tmp_path / "count.py").write_text("print(0)\nraise SystemExit(1)\n")
    turns = sh("python3 count.py") + claim({"n": "0"})
    row = _run(tmp_path, '"n:output-of:python3 count.py"', "test -f count.py", turns)
    assert row["state"] == "FAILED"
    assert str(row["reason"]).endswith("`python3 count.py` printed it but exited 1"), row["reason"]
