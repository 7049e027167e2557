"""The one glob matcher of the plan's path properties (issue 28 item 1): gitignore's semantics,
tried against git's own reading of a `.gitignore` (`git check-ignore`, with `core.ignorecase`
since letters match in either case) on generated patterns and paths, and against `pathspec`,
the library it is built on, on the cases the issue names."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pathspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundskeeper.path_patterns import PathPatterns, covers, normal_path, pattern_problem

# -- the cases the issue names ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("tests/**", "tests/expected.txt", True),
        ("tests/**", "tests/a/b/expected.txt", True),  # Path.glob gave directories only
        ("tests/*", "tests/a/b.txt", True),  # the directory tests/a is covered, so is its file
        ("tests", "tests/a/b.txt", True),  # a directory name covers what is under it
        ("tests/", "tests/a.txt", True),
        ("tests/", "tests", False),  # a file named tests is not the directory tests/
        ("*.txt", "docs/deep/a.txt", True),  # no `/` before its end: any depth
        ("docs/*.md", "docs/a/b.md", False),  # `*` does not cross `/` (b.md is not in docs/)
        ("docs/*.md", "docs/a.md", True),
        ("/a.txt", "sub/a.txt", False),  # a leading `/` anchors to the working directory
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("./tests/expected.txt", "tests/expected.txt", True),
        ("tests/expected.txt", "./tests/../tests/expected.txt", True),
        ("tests/expected.txt", "Tests/EXPECTED.txt", True),  # either case
        ("tests/expected.txt", "tests/expected.txt.bak", False),
        ("tests/expected.txt", "out/tests/expected.txt", False),
    ],
)
def test_the_issue_s_cases(pattern: str, path: str, expected: bool) -> None:
    assert covers([pattern], path) is expected


def test_a_directory_pattern_with_a_slash_covers_the_directory_when_it_is_one() -> None:
    assert PathPatterns(["tests/"]).covers("tests", is_dir=True)
    assert PathPatterns(["tests/**"]).covers("tests", is_dir=True)  # as git reads it, too
    assert not PathPatterns(["tests/"]).covers("tests")  # a file named tests
    assert PathPatterns(["tests"]).covers("tests", is_dir=True)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("!tests/keep.txt", "negations are not supported"),
        ("../outside.txt", "uses `..`"),
        ("a/../../b", "uses `..`"),
        ("~/secret", "is absolute"),
        ("  ", "empty"),
    ],
)
def test_patterns_that_name_nothing_inside_say_why_and_cover_nothing(
    pattern: str, why: str
) -> None:
    problem = pattern_problem(pattern)
    assert problem is not None and why in problem
    assert not covers([pattern], "outside.txt")
    assert not covers([pattern], "tests/keep.txt")
    assert not PathPatterns([pattern])


def test_paths_leaving_the_working_directory_are_never_covered() -> None:
    assert normal_path("../tests/expected.txt") is None
    assert normal_path("/etc/passwd") is None
    assert not covers(["**"], "../x")
    assert covers(["**"], "x")


def test_an_empty_set_covers_nothing() -> None:
    assert not PathPatterns([])
    assert not covers([], "a.txt")


# -- against git's reading of .gitignore --------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "B", "tests", "x.txt", "X.TXT", "ab.md", ".hidden", "c d"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=4).map("/".join)
_PIECES = st.sampled_from(["a", "b", "tests", "x", ".txt", "*", "?", "**", "[ab]", ".md", "B"])
# pathspec 1.1 and git part ways on `**` inside a name (`x**/b`, `***/a`): git's wildmatch
# lets it cross `/` there, pathspec does not; no plan writes them, `**` stands alone
_SEGMENTS = (
    st.lists(_PIECES, min_size=1, max_size=2)
    .map("".join)
    .filter(lambda s: "**" not in s or s == "**")
)


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    segments = draw(st.lists(_SEGMENTS, min_size=1, max_size=3))
    text = "/".join(segments)
    if draw(st.booleans()):
        text = "/" + text
    if draw(st.booleans()) and not text.endswith("**"):
        # pathspec 1.1 reads `a/**/` as `a/` (git: directories strictly below a): the one
        # reading where the two differ, and towards covering more
        text += "/"
    return text


def _git_ignored(repo: Path, patterns: list[str], paths: list[str]) -> set[str]:
    (repo / ".gitignore").write_text("".join(p + "\n" for p in patterns), encoding="utf-8")
    done = subprocess.run(
        ["git", "-c", "core.ignorecase=true", "check-ignore", "--no-index", "--stdin", "-z"],
        cwd=repo,
        input="".join(p + "\0" for p in paths),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: nothing ignored
    return {p for p in done.stdout.split("\0") if p}


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is needed as the reference reading of gitignore patterns")
    repo = tmp_path_factory.mktemp("gitignore")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_patterns(), min_size=1, max_size=3), st.lists(_PATHS, min_size=1, max_size=8))
def test_covers_agrees_with_git_check_ignore(
    git_repo: Path, patterns: list[str], paths: list[str]
) -> None:
    paths = list(dict.fromkeys(paths))
    ignored = _git_ignored(git_repo, patterns, paths)
    ours = {p for p in paths if covers(patterns, p)}
    assert ours == ignored


@settings(max_examples=250, deadline=None)
@given(st.lists(_patterns(), min_size=1, max_size=3), st.lists(_PATHS, min_size=1, max_size=8))
def test_covers_agrees_with_pathspec_on_one_case(patterns: list[str], paths: list[str]) -> None:
    lower = [p.casefold() for p in patterns]
    spec = pathspec.GitIgnoreSpec.from_lines(lower)
    for path in paths:
        assert covers(patterns, path) == spec.match_file(path.casefold())
