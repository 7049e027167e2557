"""`acceptance.work_modules`: which made modules only the work imports (adversary-18 F5),
read from the sources; anything that cannot be read frees nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundskeeper.acceptance.work_modules import source_reader, work_modules

SOLVER = "from parse2 import ints\n"
TEXTS = {"check.py": "import sys\nfrom solver2 import total\n", "solver2.py": SOLVER}


def _freed(texts: dict[str, str | None], check: str = "python3 check.py") -> frozenset[str]:
    made = [p for p in texts if p not in ("check.py", "solver2.py")]
    return work_modules(made, list(texts), lambda p: p == "solver2.py", check, texts.get)


def test_a_module_only_the_asked_code_imports_is_freed() -> None:
    assert _freed({**TEXTS, "parse2.py": "def ints(p): ...\n"}) == {"parse2.py"}


def test_freed_modules_free_what_they_import_in_turn() -> None:
    texts = {**TEXTS, "parse2.py": "from lex import words\n", "lex.py": "", "other.py": ""}
    assert _freed(texts) == {"parse2.py", "lex.py"}  # other.py: nobody imports it


@pytest.mark.parametrize(
    "checker",
    [
        "import sys\nfrom solver2 import total\nimport parse2\n",  # imports it itself
        "from solver2 import total\nfrom parse2 import ints\n",
        "import sys\nfrom solver2 import total\nimport importlib\n",  # loads by name
        "from solver2 import total\n__import__('x')\n",
        "from solver2 import total\ngetattr(__builtins__, 'x')\n",
        "from solver2 import total\nimport builtins\n",
        "from solver2 import total\nsys.modules['a'] = 1\n",
        "from solver2 import total\nexec(open('x').read())\n",
        "from solver2 import total\nf = '__import__'\n",
        "from solver2 import (\n",  # does not parse
    ],
)
def test_a_checker_that_imports_it_or_cannot_be_read_frees_nothing(checker: str) -> None:
    assert _freed({**TEXTS, "check.py": checker, "parse2.py": ""}) == frozenset()


def test_an_unreadable_checker_file_frees_nothing() -> None:
    assert _freed({**TEXTS, "check.py": None, "parse2.py": ""}) == frozenset()


def test_the_checks_own_text_naming_it_keeps_it() -> None:
    texts = {**TEXTS, "parse2.py": ""}
    assert _freed(texts, "python3 check.py && python3 -c 'import parse2'") == frozenset()


def test_a_package_is_freed_by_its_name_or_a_submodule_by_either() -> None:
    texts = {
        "check.py": "from solver2 import total\n",
        "solver2.py": "from mylib.parse import ints\n",
        "mylib/__init__.py": "",
        "mylib/parse.py": "",
    }
    assert _freed(texts) == {"mylib/__init__.py", "mylib/parse.py"}
    texts["check.py"] += "import parse\n"  # `parse` could be mylib/parse.py on sys.path
    assert _freed(texts) == {"mylib/__init__.py"}


def test_the_reader_refuses_links_large_files_and_escapes(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import b\n")
    os.symlink(tmp_path / "a.py", tmp_path / "link.py")
    (tmp_path / "big.py").write_text("#" * ((1 << 20) + 1))
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe")
    text_of = source_reader(tmp_path)
    assert text_of("a.py") == "import b\n"
    assert [text_of(p) for p in ("link.py", "big.py", "bad.py", "../a.py", "/etc/passwd")] == [
        None
    ] * 5
    assert text_of("missing.py") is None
