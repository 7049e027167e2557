"""A check never reads the work's output as code (adversary-21 F22): `[[ A -eq B ]]` compares
an expanded value only as a number (bash would read `want` as the check's own variable, the
hidden answer), and an unquoted expansion that splits into several words inside `test` or
`[` (`1 = 1 -o 1`) fails the check instead of becoming operators. Outside a check the shell
is bash's. Each fake first, then its honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.acceptance.check import SealedCheck, run_check
from groundskeeper.plan.org import Check

ARITH = "want=$(cat code.txt)\n[[ $(cat out.txt) -eq $want ]]\n"
SPLIT = "want=$(cat code.txt)\n[ $(cat out.txt) = $want ]\n"


def _check(work: Path, text: str, out: str) -> tuple[str, str | None, str]:
    (work / "code.txt").write_text("4711\n")
    (work / "out.txt").write_text(out)
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "x")), work)
    return result.verdict, result.code, result.output


@pytest.mark.parametrize(("text", "out"), [(ARITH, "want\n"), (ARITH, "want + 0\n"),
                                          (SPLIT, "1 = 1 -o 1\n")])  # fmt: skip
def test_the_work_s_output_read_as_code_fails_the_check(
    tmp_path: Path, text: str, out: str
) -> None:
    verdict, code, output = _check(tmp_path, text, out)
    assert (verdict, code) == ("FAIL", "nonzero_status")
    assert "a check never reads expanded text as code" in output


@pytest.mark.parametrize("text", [ARITH, SPLIT])
def test_the_honest_answer_passes(tmp_path: Path, text: str) -> None:
    assert _check(tmp_path, text, "4711\n")[0] == "PASS"


@pytest.mark.parametrize(
    "text",
    [
        "[[ 2+2 -eq 4 ]]",  # the author's own expression
        "n=3\n[[ $n -eq 3 ]]",
        "[[ $(wc -l < out.txt) -eq 1 ]]",
        "[ -s out.txt -a -s code.txt ]",
        '[ "$(cat out.txt)" = "4711" ]',
    ],
)
def test_ordinary_checks_still_pass(tmp_path: Path, text: str) -> None:
    assert _check(tmp_path, text, "4711\n")[0] == "PASS"


def test_outside_a_check_the_shell_is_bash_s(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("want\n")
    result = sandbox.run("want=4711; [[ $(cat out.txt) -eq $want ]]", workdir=tmp_path)
    assert result.status == 0


def test_a_file_s_text_spliced_into_a_python_program_is_a_lint_warning() -> None:
    from groundskeeper.plan.lint import validate
    from groundskeeper.plan.org import parse_plan

    def t040(check: str) -> list[str]:
        block = f"  #+begin_src sh :check\n  {check}\n  #+end_src\n"
        return [d.level for d in validate(parse_plan("* TODO t\n" + block)) if d.code == "T040"]

    spliced = (
        "python3 -c \"k = float(open('held/code.txt').read());"
        ' assert abs($(cat out.txt) - k) < 1e-3"'
    )
    assert t040(spliced) == ["warning"]
    assert t040('v=$(cat out.txt)\n  python3 -c "assert $v == 3"') == ["warning"]
    read = "python3 -c \"assert abs(float(open('out.txt').read()) - 3.1416) < 1e-3\""
    assert t040(read) == []


# adversary-28 F5: arithmetic and `expr` read the work's output as code too

ARITH2 = "want=$(cat code.txt)\n(( $(cat out.txt) == want ))\n"
ARITH3 = "want=$(cat code.txt)\ngot=$(cat out.txt)\n(( got == want ))\n"
ARITH4 = "want=$(cat code.txt)\ntest $(( $(cat out.txt) )) -eq $want\n"
EXPR = "expr $(cat out.txt) = $(cat code.txt)\n"


@pytest.mark.parametrize(
    ("text", "out"),
    [(ARITH2, "want\n"), (ARITH3, "want\n"), (ARITH4, "want\n"), (EXPR, "1 | 1\n")],
)
def test_arithmetic_and_expr_never_read_the_work_s_output_as_code(
    tmp_path: Path, text: str, out: str
) -> None:
    verdict, code, output = _check(tmp_path, text, out)
    assert (verdict, code) == ("FAIL", "nonzero_status"), output
    assert "a check never reads" in output, output


@pytest.mark.parametrize("text", [ARITH2, ARITH3, ARITH4, EXPR])
def test_arithmetic_and_expr_on_the_honest_number_pass(tmp_path: Path, text: str) -> None:
    assert _check(tmp_path, text, "4711\n")[0] == "PASS"


def test_the_author_s_own_arithmetic_stays_an_expression(tmp_path: Path) -> None:
    text = "n=$(wc -l < out.txt)\nlimit=2\n(( n * 2 <= limit + 1 ))\n(( $(cat code.txt) > 4700 ))\n"
    assert _check(tmp_path, text, "one line\n")[0] == "PASS"
