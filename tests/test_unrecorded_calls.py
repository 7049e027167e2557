"""What a worker's call wrote is never lost from the record (adversary-13 F3, F10, F12).

A call that wrote a file whose name is not UTF-8 is sealed like any other (the name as its
bytes, `{"bytes_b64": …}`), so the run goes on and a resume still holds its writes against the
task; a run stopped while a worker's call ran (SIGKILL, SIGTERM) leaves writes no sealed call
explains, which the resume attributes to the task in flight, never to the workdir before the
work."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from groundskeeper.record.ledger_format import sealable, unsealed_name
from tests.test_cli_run import keywords, resume, setup, steps, task

#: the check reads data/in.txt, an input the task does not ask to change (adversary-13 a23),
#: through a checker program: a key read in `$(…)` by awk is protected from the start, and the
#: worker's write would be refused before the run's read-set backstop could hold it
DOUBLE = """* TODO Double the number
  :PROPERTIES:
  :ID: t
  :END:
  Read the number in data/in.txt and write twice it to out.txt.
  #+begin_src sh :check
  test -s out.txt
  python3 double.py
  #+end_src
"""

#: a file named with Latin-1 bytes, a lone surrogate, a newline (adversary-13 a200, h22)
ODD_NAMES = (
    "python3 -c \\\"open(b'bad\\\\xff\\\\xfe.txt','wb').write(b'x');"
    " open('nl\\\\nname.txt','w').write('x'); open('\\\\udcff.txt','w').write('x')\\\""
)
SAYS_DONE = "workers:\n  t: [{say: DONE}]\n"


def _double(tmp_path: Path, cmd: str) -> tuple[Path, Path]:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("42\n")
    (tmp_path / "double.py").write_text(
        'n = int(open("data/in.txt").read())\n'
        'assert open("out.txt").read().split() == [str(2 * n)]\n'
    )
    return setup(
        tmp_path, DOUBLE, f'workers:\n  t: [{{tool: sh, input: {{cmd: "{cmd}"}}}}, {{say: DONE}}]\n'
    )


def test_a_name_that_is_not_utf8_is_sealed_as_its_bytes_and_read_back() -> None:
    name = os.fsdecode(b"legacy/r\xe9sum\xe9.txt")
    sealed = sealable({"wrote": [name, "out.txt"], "cmd": "x\ud800"})
    assert sealed == {
        "wrote": [{"bytes_b64": base64.b64encode(b"legacy/r\xe9sum\xe9.txt").decode()}, "out.txt"],
        "cmd": {"bytes_b64": base64.b64encode(b"x\xed\xa0\x80").decode()},
    }
    assert [unsealed_name(p) for p in sealed["wrote"]] == [name, "out.txt"]
    assert unsealed_name({"bytes_b64": "!!"}) is None
    assert unsealed_name(7) is None


def test_writes_sealed_with_a_name_that_is_not_utf8_fail_the_run_and_every_resume(
    tmp_path: Path,
) -> None:
    plan, script = _double(tmp_path, f"echo 1 > data/in.txt; echo 2 > out.txt; {ODD_NAMES}")
    result, _ = resume(plan, script)
    assert keywords(plan) == {"t": "FAILED"}, result.output
    calls = steps(plan, "tool-call")
    assert {"bytes_b64": base64.b64encode(b"bad\xff\xfe.txt").decode()} in calls[0]["wrote"]
    assert "data/in.txt" in calls[0]["wrote"]
    script.write_text(SAYS_DONE)
    result, _ = resume(plan, script)
    assert keywords(plan) == {"t": "FAILED"}, result.output
    assert "the check read `data/in.txt` (an input of the check), which the worker of task `t`" in (
        result.output
    )


def test_an_honest_worker_saving_a_latin1_file_name_is_done(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Unpack the legacy export", "t", "grep -qx ok out/status.txt")
        + "  Save the legacy CV under its Latin-1 name in legacy/, then write out/status.txt.\n",
        "workers:\n  t: [{tool: sh, input: {cmd: \"mkdir -p legacy out && python3 -c \\\"open(b'legacy/r\\\\xe9sum\\\\xe9.txt','wb').write(b'cv')\\\" && echo ok > out/status.txt\"}}, {say: DONE}]\n",  # noqa: E501
    )
    result, _ = resume(plan, script)
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"t": "DONE"}
    assert (tmp_path / os.fsdecode(b"legacy/r\xe9sum\xe9.txt")).read_bytes() == b"cv"
    ledger = json.dumps(steps(plan, "tool-call"))
    assert base64.b64encode(b"legacy/r\xe9sum\xe9.txt").decode() in ledger
