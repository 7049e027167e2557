"""The property behind a check's verdict: over generated check texts, PASS iff the same text
run by bash under `set -e` exits 0 — whatever comments, missing newlines, `!`, `||` and `;`
the text holds, and whatever it prints (a forged sentinel included)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from groundskeeper.acceptance.check import SealedCheck, run_check
from groundskeeper.plan.org import Check

FORGED = "__WB_CHECK_OK_" + "ab" * 16 + "__"
COMMANDS = [
    "true",
    "false",
    "echo hi",
    "printf nonl",
    f"echo {FORGED}",
    "test -e present.txt",
    "test -e absent.txt",
    "grep -q here present.txt",
    "grep -q nowhere present.txt",
    "cat present.txt",
]
pipeline = st.builds(
    lambda neg, cmd: ("! " if neg else "") + cmd, st.booleans(), st.sampled_from(COMMANDS)
)
and_or = st.builds(
    lambda first, rest: first + "".join(f" {op} {p}" for op, p in rest),
    pipeline,
    st.lists(st.tuples(st.sampled_from(["&&", "||"]), pipeline), max_size=2),
)
line = st.builds(
    lambda items, comment: "; ".join(items) + ("  # a comment" if comment else ""),
    st.lists(and_or, min_size=1, max_size=3),
    st.booleans(),
)
script = st.lists(line, min_size=1, max_size=4).map("\n".join)


@settings(max_examples=80)
@given(text=script)
def test_pass_iff_bash_under_set_e_exits_0(tmp_path_factory: object, text: str) -> None:
    work: Path = tmp_path_factory.mktemp("prop")  # type: ignore[attr-defined]
    (work / "present.txt").write_text("here\n")
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "block")), work, timeout=5)
    bash = subprocess.run(["bash", "-c", "set -e\n" + text], cwd=work, capture_output=True,
                          check=False)  # fmt: skip
    assert result.passed == (bash.returncode == 0), (text, result.code, result.reason)
    if result.passed:
        assert "__WB_CHECK_OK_" not in result.output.replace(FORGED, "")
