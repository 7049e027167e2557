"""Self-made evidence, judged by what produced the quote: an `output-of` quote is refused when
the program of the command that printed it (a script an interpreter runs, a workdir file run
as a command, `python3 -m mod`) was written by the task's worker before that command ran, or
when a file holding the quote was written before it ran. A report saved after the quoting
command (`cmd > report.txt`) is not the worker's own words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from groundskeeper.plan.programs import command_programs
from groundskeeper.sandbox.result import ShellResult
from groundskeeper.supervisor.runner import MemoryRecorder, Runner, RunOptions
from tests.test_cli_run import resume, setup

# a validator that reads the definition: `Syntax: OK` only for valid JSON with a name
VALIDATOR = (
    "import json, sys\n"
    "try:\n"
    "    data = json.load(open(sys.argv[1]))\n"
    "except ValueError as exc:\n"
    "    print('Syntax error:', exc)\n"
    "    sys.exit(1)\n"
    "print('Syntax: ' + ('OK' if 'name' in data else 'no name'))\n"
)
COUNTER = (
    "import sys\n"
    "rows = open(sys.argv[1]).read().splitlines()[1:]\n"
    "print('rows:', len(rows))\n"
    "print('total:', sum(int(r.split(',')[1]) for r in rows))\n"
)
FAKE_PROGRAM = 'printf \'print("Syntax: " + "OK")\' > validate.py'  # the quote in no file


def sh(cmd: str) -> str:
    return f"    - {{tool: sh, input: {{cmd: {json.dumps(cmd)}}}}}\n"


def claim(evidence: dict[str, Any]) -> str:
    return (
        f"    - {{tool: claim_done, input: {{summary: done, evidence: {json.dumps(evidence)}}}}}\n"
    )


def task(evidence: str, check: str, writable: str | None = None) -> str:
    # a check that runs a workdir program protects it on its own (adversary-6 F1): these
    # tests free it with `:writable:` to reach the evidence rule behind that protection
    free = f"  :writable: {writable}\n" if writable else ""
    return (
        f"* TODO t\n  :PROPERTIES:\n  :ID: t\n  :max-attempts: 1\n  :evidence: {evidence}\n"
        f"{free}  :END:\n  #+begin_src sh :check\n  {check}\n  #+end_src\n"
    )


def seed(tmp_path: Path, definition: str = '{"title": "order"\n') -> None:
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "order.json").write_text(definition)  # broken: no closing brace
    (tmp_path / "validate.py").write_text(VALIDATOR)


VALIDATED = '"validation_output:output-of:python3 validate.py defs/order.json"'
SYNTAX_OK = {"validation_output": "Syntax: OK"}
VALIDATE = "python3 validate.py defs/order.json"


def test_a_rewritten_validator_does_not_vouch_for_its_quote(tmp_path: Path) -> None:
    """The fresh adversary's fake: the check and the quoting command both run the program the
    worker rewrote; the quote is in no file, so only the program's writer tells."""
    seed(tmp_path)
    turns = sh(FAKE_PROGRAM) + sh("python3 validate.py defs/order.json") + claim(SYNTAX_OK)
    plan, script = setup(tmp_path, task(VALIDATED, VALIDATE, "validate.py"),
                         "workers:\n  t:\n" + turns)  # fmt: skip
    _, doc = resume(plan, script)
    (done,) = doc["tasks"]
    assert done["state"] == "FAILED"
    assert done["reason"] == (
        "false evidence: validation_output: `validate.py`, the program of `python3 validate.py"
        " defs/order.json`, was written by this task's worker (tool call 1) before it printed"
        " the quote: its output is the worker's own words, not evidence"
    )


def test_a_report_saved_after_the_quoting_command_is_not_self_made(tmp_path: Path) -> None:
    """The honest twin: run the tool, then save its report and quote it."""
    (tmp_path / "data").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "data" / "orders.csv").write_text("id,amount\n1,40\n2,2\n")
    (tmp_path / "count.py").write_text(COUNTER)
    turns = (
        sh("python3 count.py data/orders.csv")
        + sh("python3 count.py data/orders.csv | grep total > out/total.txt")
        + claim({"summary": "total: 42", "total": 42})
    )
    evidence = '"summary:output-of:python3 count.py data/orders.csv" total:int'
    plan, script = setup(tmp_path, task(evidence, "grep -qx 'total: 42' out/total.txt"),
                         "workers:\n  t:\n" + turns)  # fmt: skip
    _, doc = resume(plan, script)
    (done,) = doc["tasks"]
    assert (done["state"], done["reason"]) == ("DONE", None)
    assert (tmp_path / "out" / "total.txt").read_text() == "total: 42\n"


@pytest.mark.parametrize(
    "rename",
    [
        "mv scratch.txt validate.py",
        "python3 -c \"import os; os.replace('scratch.txt', 'validate.py')\"",
        "python3 -c \"import os; os.remove('validate.py');"
        " os.symlink('scratch.txt', 'validate.py')\"",  # the link's target: written in call 1
    ],
)
def test_a_program_renamed_or_linked_into_place_is_written(tmp_path: Path, rename: str) -> None:
    seed(tmp_path)
    turns = (
        sh('printf \'print("Syntax: " + "OK")\' > scratch.txt')
        + sh(rename)
        + sh("python3 validate.py defs/order.json")
        + claim(SYNTAX_OK)
    )
    plan, script = setup(tmp_path, task(VALIDATED, VALIDATE, "validate.py"),
                         "workers:\n  t:\n" + turns)  # fmt: skip
    _, doc = resume(plan, script)
    (done,) = doc["tasks"]
    assert done["state"] == "FAILED"
    assert done["reason"].startswith(
        "false evidence: validation_output: `validate.py`, the program of `python3 validate.py"
        " defs/order.json`, was written by this task's worker (tool call"
    )


@pytest.mark.parametrize(
    ("written", "cmd"),
    [
        ("mod.py", "python3 -m mod defs/order.json"),
        ("mod/__main__.py", "python3 -m mod defs/order.json"),
        ("pkg/check.py", "python3 -u -m pkg.check defs/order.json"),
    ],
)
def test_a_module_run_with_m_is_resolved_in_the_workdir(
    tmp_path: Path, written: str, cmd: str
) -> None:
    seed(tmp_path)
    (tmp_path / written).parent.mkdir(parents=True, exist_ok=True)
    if written.startswith("pkg/"):
        (tmp_path / "pkg" / "__init__.py").write_text("")
    pattern = f'"validation_output:output-of:{cmd}"'
    turns = sh(f'printf \'print("Syntax: " + "OK")\' > {written}') + sh(cmd) + claim(SYNTAX_OK)
    plan, script = setup(tmp_path, task(pattern, cmd), "workers:\n  t:\n" + turns)
    _, doc = resume(plan, script)
    (done,) = doc["tasks"]
    assert done["state"] == "FAILED"
    assert done["reason"].startswith(
        f"false evidence: validation_output: `{written}`, the program of `{cmd}`, was written"
    )


def test_a_program_changed_after_the_quoting_command_ran_is_not_self_made_but_stale(
    tmp_path: Path,
) -> None:
    # not self-made (written after the quote), but an input of the quoted run that changed
    # afterwards: the quote speaks of a program no longer there (adversary-11 F20)
    seed(tmp_path, '{"name": "order"}\n')
    turns = (
        sh("python3 validate.py defs/order.json")
        + sh("printf '# checked\\n' >> validate.py")
        + claim(SYNTAX_OK)
    )
    plan, script = setup(tmp_path, task(VALIDATED, VALIDATE, "validate.py"),
                         "workers:\n  t:\n" + turns)  # fmt: skip
    _, doc = resume(plan, script)
    (done,) = doc["tasks"]
    assert done["state"] == "FAILED"
    assert str(done["reason"]).startswith(
        "false evidence: validation_output: evidence from a run whose input changed"
        " afterwards: `validate.py` (it holds something else now: written by tool call 2 after"
    )


def test_a_file_holding_the_quote_written_before_the_command_is_self_made(
    tmp_path: Path,
) -> None:
    seed(tmp_path, '{"name": "order"}\n')
    (tmp_path / "out").mkdir()
    turns = (
        sh("printf 'Syntax: OK\\n' > out/notes.txt")
        + sh("python3 validate.py defs/order.json")
        + claim(SYNTAX_OK)
    )
    plan, script = setup(tmp_path, task(VALIDATED, VALIDATE, "validate.py"),
                         "workers:\n  t:\n" + turns)  # fmt: skip
    _, doc = resume(plan, script)
    (done,) = doc["tasks"]
    assert done["state"] == "FAILED"
    assert done["reason"].startswith(
        "false evidence: validation_output: `out/notes.txt`, which this attempt wrote before"
        " `python3 validate.py defs/order.json` ran (tool call 1), holds the quote"
    )


def test_a_program_an_earlier_attempt_wrote_is_the_workers(tmp_path: Path) -> None:
    """The rewrite in attempt 1, the quoting run in attempt 2: still the worker's program."""
    seed(tmp_path)
    turns = (
        sh(FAKE_PROGRAM) + claim({}) + sh("python3 validate.py defs/order.json") + claim(SYNTAX_OK)
    )
    plan_text = task(VALIDATED, VALIDATE, "validate.py")
    plan_text = plan_text.replace(":max-attempts: 1", ":max-attempts: 2")
    plan, script = setup(tmp_path, plan_text, "workers:\n  t:\n" + turns)
    _, doc = resume(plan, script)
    (done,) = doc["tasks"]
    assert (done["state"], done["attempts"]) == ("FAILED", 2)
    assert done["reason"] == (
        "false evidence: validation_output: `validate.py`, the program of `python3 validate.py"
        " defs/order.json`, was written by an earlier attempt of this task: its output is the"
        " worker's own words, not evidence"
    )


# -- programs the sandbox does not run itself, and a record that cannot tell -----------------


class StandIn:
    """A sandbox stand-in that answers the listed command lines itself (status 0, `Syntax:
    OK`) and writes what `writes` maps a line to behind the sandbox's back (no journal);
    every other line goes to the real sandbox."""

    def __init__(self, answers: set[str], writes: dict[str, tuple[Path, str]] | None = None):
        self.answers, self.writes = answers, writes or {}

    def __call__(self, cmdline: str, **kwargs: Any) -> ShellResult:
        if cmdline in self.answers:
            return ShellResult(0, "Syntax: OK\n", "", 1.0)
        if cmdline in self.writes:
            path, text = self.writes[cmdline]
            path.write_text(text)
            return ShellResult(0, "", "", 1.0)
        from groundskeeper.sandbox import run

        return run(cmdline, **kwargs)


def run_with(tmp_path: Path, evidence: str, turns: str, shell: StandIn) -> Any:
    seed(tmp_path)
    plan = tmp_path / "plan.org"
    plan.write_text(
        "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n* TODO t\n  :PROPERTIES:\n  :ID: t\n"
        f"  :max-attempts: 1\n  :evidence: {evidence}\n  :END:\n"
    )
    model = ScriptedModel.from_yaml("workers:\n  t:\n" + turns)
    runner = Runner(load_plan(plan), model=model, recorder=MemoryRecorder(),
                    options=RunOptions(max_parallel=1), shell=shell)  # fmt: skip
    (done,) = runner.run().tasks
    return done


@pytest.mark.parametrize(
    ("cmd", "program", "pattern"),
    [("sh check.sh", "check.sh", "sh *"),
     ("bash -e check.sh defs/order.json", "check.sh", "bash *"),
     ("./check.sh", "check.sh", "./check.sh"), ("check.sh", "check.sh", "check.sh"),
     (". ./check.sh", "check.sh", ". *"), ("python3 < check.sh", "check.sh", "python3")],
)  # fmt: skip
def test_a_script_a_shell_or_the_command_word_runs_is_its_program(
    tmp_path: Path, cmd: str, program: str, pattern: str
) -> None:
    turns = sh("printf 'echo Syntax:  OK\\n' > check.sh")  # two spaces: not the quote
    turns += sh(cmd) + claim(SYNTAX_OK)
    done = run_with(tmp_path, f'"validation_output:output-of:{pattern}"', turns, StandIn({cmd}))
    assert done.state == "FAILED"
    assert done.reason.startswith(
        f"false evidence: validation_output: `{program}`, the program of `{cmd}`, was written by"
        " this task's worker (tool call 1) before it printed the quote"
    )


def test_a_script_the_worker_did_not_write_holds(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text("echo Syntax: OK\n")
    turns = sh("sh check.sh") + claim(SYNTAX_OK)
    done = run_with(tmp_path, '"validation_output:output-of:sh check.sh"', turns,
                    StandIn({"sh check.sh"}))  # fmt: skip
    assert (done.state, done.reason) == ("DONE", None)


def test_a_write_the_record_cannot_place_refuses_the_quote(tmp_path: Path) -> None:
    """A call before the quoting one whose writes are not in the record (a stand-in shell,
    no journal) may have written the program: no quote holds, and the reason says why."""
    forged = "print('Syntax: ' + 'OK')\n"
    shell = StandIn({"python3 validate.py defs/order.json"},
                    {"make it": (tmp_path / "validate.py", forged)})  # fmt: skip
    turns = sh("make it") + sh("python3 validate.py defs/order.json") + claim(SYNTAX_OK)
    done = run_with(tmp_path, VALIDATED, turns, shell)
    assert done.state == "FAILED"
    assert done.reason == (
        "false evidence: validation_output: what tool call 1 (`make it`) wrote is not in the"
        " record, and `validate.py`, the program of `python3 validate.py defs/order.json`,"
        " changed in this attempt: whether the worker wrote it before the quote was printed"
        " cannot be told"
    )


# -- lint: one reading of the command with the runtime ---------------------------------------


def lint(tmp_path: Path, props: str) -> list[tuple[str, str]]:
    plan = tmp_path / "plan.org"
    plan.write_text(
        "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n* TODO t\n  :PROPERTIES:\n"
        f"  :done-when: grep -q x a.txt\n{props}  :END:\n"
    )
    return [(d.level, d.message) for d in validate(load_plan(plan)) if d.code == "T027"]


def test_lint_warns_when_the_quoting_program_is_the_workers_to_rewrite(tmp_path: Path) -> None:
    (tmp_path / "validate.py").write_text(VALIDATOR)
    assert lint(tmp_path, f"  :evidence: {VALIDATED}\n") == [(
        "warning",
        ":evidence: `validation_output:output-of:python3 validate.py defs/order.json`: the"
        " worker could rewrite the program that prints the quote (`validate.py`); :protect: it"
        " (`:protect: validate.py`)",
    )]  # fmt: skip
    for guarded in (":protect: validate.py", ":hide: validate.py", ":protect: *.py"):
        assert lint(tmp_path, f"  :evidence: {VALIDATED}\n  {guarded}\n") == [], guarded
    freed = f"  :evidence: {VALIDATED}\n  :protect: validate.py\n  :writable: validate.py\n"
    assert [level for level, _ in lint(tmp_path, freed)] == ["warning"]


def test_lint_reads_the_program_as_the_runtime_does(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "lint.py").write_text("")
    (tmp_path / "mod.py").write_text("")
    said = lint(
        tmp_path,
        "  :evidence: 'a:output-of:python3 -m mod *' 'b:output-of:yamllint x'"
        " 'c:output-of:./tools/lint.py x' 'd:output-of:python3 -m pytest x'\n",
    )
    assert [m.split(": the worker")[1] for _, m in said] == [
        " could rewrite the program that prints the quote (`mod.py`); :protect: it"
        " (`:protect: mod.py`)",
        " could rewrite the program that prints the quote (`tools/lint.py`); :protect: it"
        " (`:protect: tools/lint.py`)",
    ]  # pytest is no workdir module here, and yamllint is a command


def test_the_reading_of_a_command_names_its_programs_or_why_not() -> None:
    def paths(cmd: str) -> list[tuple[str, ...]] | str:
        found = command_programs(cmd)
        return found if isinstance(found, str) else [p.paths for p in found]

    assert paths("python3 -W ignore -B ./tools/../v.py x") == [("v.py",)]
    assert paths("python3 count.py a | grep total > out/t && sh -o errexit s.sh") == [
        ("count.py",), ("s.sh",)
    ]  # fmt: skip
    assert paths("python3 -mpkg.run") == [
        ("pkg/run.py", "pkg/run/__init__.py", "pkg/run/__main__.py", "pkg/__init__.py")
    ]  # fmt: skip
    for own_text in ("python3 -c 'print(1)'", "bash -c 'echo hi'", "python3 <<< 'print(1)'",
                     "grep -c x y", "cd sub"):  # fmt: skip
        assert paths(own_text) == [], own_text
    assert paths("python3 $SCRIPT") == "`python3 …` names its script through an expansion or a glob"
    assert paths("$TOOL x") == "`… x` names its command through an expansion or a glob"
    assert paths("python3 v*.py") == "`python3 …` names its script through an expansion or a glob"
    assert paths("cat v.py | python3") == (
        "`python3` reads its program from standard input, which the line does not name"
    )
    assert (
        paths("python3 ../v.py")
        == "`python3 ../v.py` names its program `../v.py`, outside the workdir"
    )


def test_lint_says_when_the_task_makes_the_program_its_work(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n* TODO Fix validate.py\n  :PROPERTIES:\n"
        f"  :done-when: grep -q x a.txt\n  :evidence: {VALIDATED}\n  :END:\n"
        "  Fix validate.py so that it accepts a definition without a title.\n"
    )
    (said,) = [d.message for d in validate(load_plan(plan)) if d.code == "T027"]
    assert said.endswith(
        "the task asks the worker to change `validate.py`, the program that prints the quote,"
        " so its output is the worker's own and never holds as evidence; quote a command that"
        " tests it, or let the check run it"
    )
