"""A property: `${VAR#p}`, `${VAR##p}`, `${VAR%p}` and `${VAR%%p}` remove what bash removes,
for every pattern form (`*`, `?`, `[…]`, `[!…]`, quoted and backslashed parts), inside double
quotes and outside them. Each generated case runs in the sandbox and in bash (the reference,
in an empty directory so an unquoted result globs to itself) and both must print the same."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from groundskeeper import sandbox

BASH = shutil.which("bash")

# values: file-name-like text with the characters patterns care about
values = st.text(alphabet="ab./*?-", min_size=0, max_size=8)

PIECES = [
    "a", "b", ".", "/", "-",  # literal characters
    "*", "?", "[ab]", "[!a]", "[.-]", "[[:alpha:]]",  # pattern characters
    '"*"', "'?'", "\\*", '"a*"', "'.'",  # quoted: match themselves
]  # fmt: skip
patterns = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)
operators = st.sampled_from(["#", "##", "%", "%%"])


def _script(value: str, op: str, pattern: str, quoted: bool) -> str:
    expansion = f"${{v{op}{pattern}}}"
    shown = f'"{expansion}"' if quoted else expansion
    return f"v='{value}'; printf '[%s]\\n' {shown}"


@pytest.mark.skipif(BASH is None, reason="bash, the reference, is not installed")
@settings(max_examples=250, derandomize=True, deadline=None)
@given(value=values, op=operators, pattern=patterns, quoted=st.booleans())
def test_pattern_removal_agrees_with_bash(
    tmp_path_factory: pytest.TempPathFactory, value: str, op: str, pattern: str, quoted: bool
) -> None:
    # unquoted, a result is globbed: one starting at `/` would glob the host's root in bash
    # and is refused outside the workdir in the sandbox, a difference of confinement
    assume(quoted or "/" not in value)
    workdir: Path = tmp_path_factory.mktemp("pe")
    script = _script(value, op, pattern, quoted)
    assert BASH is not None
    expected = subprocess.run(
        [BASH, "-c", script], cwd=workdir, capture_output=True, text=True, check=False
    )
    got = sandbox.run(script, workdir=workdir)
    assert (got.stdout, got.status) == (expected.stdout, expected.returncode), script


@pytest.mark.parametrize(
    ("expansion", "expected"),
    [
        ('"${f##*/}"', "a.md"),
        ('"${f%.*}"', "docs/a"),
        ('"${f%/*}"', "docs"),
        ('"${f#*/}"', "a.md"),
        ('"${f#*X}"', "docs/a.md"),
        ('"${f%.[mM]d}"', "docs/a"),
        ("${f##*/}", "a.md"),
    ],
)
def test_the_everyday_file_name_idioms(tmp_path: Path, expansion: str, expected: str) -> None:
    result = sandbox.run(f"f=docs/a.md; echo {expansion}", workdir=tmp_path)
    assert (result.stdout, result.status) == (expected + "\n", 0)
