"""Adversary-18 F12 and F7 through the CLI: plain-English asks to change a file ("bring X up
to date", "add that header to X", "X and Y both need …", a place after an aside, "X's
output", "make X match it") free it for the worker asked, so the honest worker that updates
the golden file and the renderer together is DONE; a text that only mentions the golden still
keeps it (the fake is refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _write

# The six wordings of adversary-18 F12, each for its own renderN.py / goldenN.txt.
WORDINGS = [
    "The expected output in golden1.txt is outdated: bring it up to date with the new header"
    " line `# v2`, and make render1.py print the same.",
    "Change render2.py to print a `# v2` header first, and add that header to golden2.txt too.",
    "golden3.txt and render3.py both need the new `# v2` header line.",
    "Switch the output format to v2 (a `# v2` header) in render4.py and in its golden file"
    " golden4.txt.",
    "Put a `# v2` header at the top of golden5.txt and of render5.py's output.",
    "Prepend a `# v2` header line to golden6.txt, then make render6.py match it.",
]
RENDER_V2 = 'print(\\"# v2\\")\\nprint(\\"a\\")'


def _renderers(root: Path, numbers: range) -> None:
    for n in numbers:
        (root / f"render{n}.py").write_text('print("a")\n')
        (root / f"golden{n}.txt").write_text("a\n")


def _both(n: int) -> str:
    """The honest worker: the golden and the renderer, both with the header."""
    return (
        f"  r{n}:\n"
        + _write(f"golden{n}.txt", "# v2\\na")
        + f'    - {{tool: write_file, input: {{path: render{n}.py, content: "{RENDER_V2}\\n"}}}}\n'
        + "    - say: DONE\n"
    )


def test_each_plain_wording_frees_the_golden_and_the_renderer(tmp_path: Path) -> None:
    _renderers(tmp_path, range(1, 7))
    plan_text = "".join(
        task(f"r{n}", f"r{n}", f"python3 render{n}.py | diff - golden{n}.txt", max_attempts="1")
        + text
        + "\n"
        for n, text in enumerate(WORDINGS, start=1)
    )
    workers = "workers:\n" + "".join(_both(n) for n in range(1, 7))
    plan, script = setup(tmp_path, plan_text, workers)
    # lint has nothing to say of an ask it reads plainly
    assert [d.code for d in validate(load_plan(plan)) if d.code in ("T028", "T031")] == []
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert {f"r{n}": _row(doc, f"r{n}")["state"] for n in range(1, 7)} == {
        f"r{n}": "DONE" for n in range(1, 7)
    }, [_row(doc, f"r{n}")["reason"] for n in range(1, 7)]
    assert (tmp_path / "golden3.txt").read_text() == "# v2\na\n"
    assert result.exit_code == 0


def test_a_text_that_only_mentions_the_golden_keeps_it_and_asks_only_what_it_names(
    tmp_path: Path,
) -> None:
    _renderers(tmp_path, range(1, 3))
    plan_text = (
        task("r1", "r1", "python3 render1.py | diff - golden1.txt", max_attempts="1")
        + "Make render1.py print a `# v2` header first; golden1.txt is the expected output.\n"
        # the golden asked, not the renderer: the renderer is the reference, kept
        + task("r2", "r2", "python3 render2.py | diff - golden2.txt", max_attempts="1")
        + "Prepend a `# v2` header line to golden2.txt.\n"
    )
    workers = "workers:\n" + _both(1) + _both(2)
    plan, script = setup(tmp_path, plan_text, workers)
    result, doc = resume(plan, script, "--max-parallel", "1")
    r1, r2 = _row(doc, "r1"), _row(doc, "r2")
    assert (r1["state"], r2["state"]) == ("FAILED", "FAILED")
    assert r1["reason"].startswith(
        "protected_input_changed: protected input changed: golden1.txt"
    ), r1["reason"]
    assert r2["reason"].startswith(
        "protected_input_changed: protected input changed: render2.py"
    ), r2["reason"]
    assert (tmp_path / "golden1.txt").read_text() == "a\n"
    assert (tmp_path / "render2.py").read_text() == 'print("a")\n'
    assert result.exit_code == 1


def test_a_fixture_added_in_a_named_conftest_is_done(tmp_path: Path) -> None:
    # adversary-18 F7: "Add a pytest fixture … in tests2/conftest.py" asks for that file
    (tmp_path / "tests2").mkdir()
    (tmp_path / "tests2" / "test_pair.py").write_text(
        "def test_pair(pair):\n    assert pair == (2, 3)\n"
    )
    plan, script = setup(
        tmp_path,
        task("Share a fixture", "f", "python3 -m pytest -q tests2", max_attempts="1", timeout="120")
        + "Add a pytest fixture named `pair` returning (2, 3) in tests2/conftest.py, and use it"
        " in tests2/test_pair.py.\n",
        "workers:\n  f:\n"
        + _write(
            "tests2/conftest.py",
            "import pytest\\n\\n\\n@pytest.fixture\\ndef pair():\\n    return (2, 3)",
        )
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert _row(doc, "f")["state"] == "DONE", _row(doc, "f")["reason"]
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("text", "state"),
    [
        # adversary-18 F12's last wording: the list is to fit the new file, so it is asked
        (
            "Write out4.txt with the line hello. The checksum in out4.sha256 must match the"
            " new file.",
            "DONE",
        ),
        ("Write out4.txt with the line hello.", "FAILED"),  # the list only compared: kept
    ],
)
def test_a_checksum_list_said_to_match_the_new_file_is_asked(
    tmp_path: Path, text: str, state: str
) -> None:
    import hashlib

    (tmp_path / "out4.txt").write_text("old\n")
    digest = hashlib.sha256(b"old\n").hexdigest()
    (tmp_path / "out4.sha256").write_text(f"{digest}  out4.txt\n")
    plan, script = setup(
        tmp_path,
        task("s4", "s4", "grep -qx hello out4.txt && sha256sum -c out4.sha256", max_attempts="1")
        + text
        + "\n",
        "workers:\n  s4:\n"
        + _write("out4.txt", "hello")
        + "    - {tool: sh, input: {cmd: 'sha256sum out4.txt > out4.sha256'}}\n"
        + "    - say: DONE\n",
    )
    _result, doc = resume(plan, script)
    assert _row(doc, "s4")["state"] == state, _row(doc, "s4")["reason"]
