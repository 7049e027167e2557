"""The examples a doctest check runs, held to what was there before the work.

`python3 -m doctest mathx.py` runs the examples written in the code under test, which its
worker must be free to edit: deleting a failing example passes the check (adversary-21 F14),
as deleting a failing test would pass pytest's. So every example a check's files held when
the run started must still be there, with the same source and the same expected output,
when the check passes. The examples are read from the files' text on the host (`ast` and
`doctest`'s own parser), never by importing them.

It owns that reading; `supervisor.run_paths` keeps the examples of the run's start and
`supervisor.run_checks` fails a pass that lost one; in an agent's session, the workdir
snapshot the user seals keeps them (`agents.snapshot`) and the hook fails such a pass
(`agents.gate`).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from groundskeeper.path_patterns import covers, normal_path
from groundskeeper.plan.asked_sentences import text_asks
from groundskeeper.plan.org import CHECK_LANGUAGE
from groundskeeper.plan.spec import TaskSpec

__all__ = [
    "doctest_files",
    "doctest_modules",
    "examples_in",
    "examples_lost",
    "sealable",
    "task_doctest_files",
]

#: A file larger than this is not read for examples: a lost example in it is not seen, and
#: one that was readable before and is not now fails closed.
MAX_BYTES = 2 * 1024 * 1024
#: An example's digest: the first 96 bits of the SHA-256 of its source and expected output
#: (a worker would need a second preimage to pass a changed example off as the old one).
DIGEST_CHARS = 24
#: At most this many digests are sealed in a run-start (a ledger line holds 64 KiB): past
#: that, a later run holds the files to what they held at its own start.
MAX_SEALED = 1000
_PYTHONS = frozenset({"python", "python3"})
_OPTIONS_WITH_VALUE = frozenset({"-o", "--option"})


def doctest_files(check_text: str) -> tuple[str, ...]:
    """The workdir files each `python3 -m doctest [-v] [-o OPT] FILE…` of a shell check
    runs the examples of, as written (literal words only), in order, each once; and the
    `.py` files of a `python3 -m pytest --doctest-modules …` (`doctest_modules`)."""
    found: list[str] = []
    for words in _commands(check_text):
        if _pytest_doctest_modules(words):
            found += _pytest_module_operands(words)
            continue
        if len(words) < 4 or words[0] not in _PYTHONS or words[1:3] != ["-m", "doctest"]:
            continue
        rest = iter(words[3:])
        for word in rest:
            if word is None:
                continue
            if word in _OPTIONS_WITH_VALUE:
                next(rest, None)
            elif not word.startswith("-") and (path := normal_path(word)) is not None:
                found.append(path)
    return tuple(dict.fromkeys(found))


@functools.lru_cache(maxsize=1024)
def _commands(check_text: str) -> tuple[list[str | None], ...]:
    """Each simple command of a check as its literal words (None: a word known only when
    it runs); none when the check does not parse. Do not change the lists: cached."""
    from groundskeeper.sandbox.syntax import ShellSyntaxError, parse, simple_commands

    try:
        script = parse(check_text)
    except ShellSyntaxError:
        return ()
    return tuple([w.literal() for w in command.words] for command in simple_commands(script))


def _pytest_doctest_modules(words: list[str | None]) -> bool:
    """Whether a command is `python3 -m pytest … --doctest-modules …` (adv24b F5: the
    examples pytest collects from the modules it is given are a doctest check's too)."""
    return (
        len(words) >= 4
        and words[0] in _PYTHONS
        and words[1:3] == ["-m", "pytest"]
        and "--doctest-modules" in words
    )


def _pytest_module_operands(words: list[str | None]) -> list[str]:
    """The literal `.py` files such a command hands pytest (options aside; a directory's
    modules are not read out of it)."""
    found: list[str] = []
    for word in words[3:]:
        file = word.split("::", 1)[0] if word is not None else ""
        if file.startswith("-") or not file.endswith(".py"):
            continue
        path = normal_path(file)
        if path is not None:
            found.append(path)
    return found


def doctest_modules(check_text: str) -> tuple[str, ...]:
    """The `.py` files a `python3 -m pytest --doctest-modules FILE…` of a check hands
    pytest: modules whose docstring examples are the check's tests, and whose code is the
    work — `check_inputs` takes such a file for the code under test (adv24b F10), its
    examples held by `examples_lost`."""
    if "--doctest-modules" not in check_text:
        return ()
    found = [f for w in _commands(check_text) if _pytest_doctest_modules(w)
             for f in _pytest_module_operands(w)]  # fmt: skip
    return tuple(dict.fromkeys(found))


#: A text that asks for the examples themselves to change ("update its doctest examples",
#: "update the doctests in mathx.py to match"), in a sentence that does not negate it.
_ASKS_EXAMPLES = re.compile(
    r"\b(?:update|change|correct|adjust|rewrite|edit|amend)\s+"
    r"(?:(?:its|the|their|all|every|these|those|each|any|both|two|three|four|\d+)\s+)*"
    r"(?:doctests?|doc\s*tests?|(?:(?:doctest|docstring)\s+)?examples?)\b"
    # "change the expected output of its examples to 2.5" (adversary-28 H1)
    r"|\b(?:update|change|correct|adjust)\s+the\s+expected\s+(?:outputs?|results?|values?)"
    r"\s+of\s+(?:its|the|their|these|those)\s+(?:(?:doctest|docstring)\s+)?examples?\b"
    # "its docstring examples are wrong too: they should show 2.5" (a ticket's wording)
    r"|\b(?:doctest|docstring)\s+examples?\s+(?:are|is)\s+(?:also\s+)?"
    r"(?:wrong|incorrect|outdated|stale|out\s+of\s+date)\b",
    re.IGNORECASE,
)


def task_doctest_files(task: TaskSpec) -> tuple[str, ...]:
    """The files the task's check runs the examples of (`doctest_files`) and holds to the
    examples they had: none for a task without a shell check, nor for one that frees them —
    its text asks for the examples to change, or its `:writable:` names the file
    (adv24b F9: updating the examples as asked was refused)."""
    check = task.check
    if check is None or check.language != CHECK_LANGUAGE or "doctest" not in check.text:
        return ()
    files = doctest_files(check.text)
    if not files:
        return ()
    if text_asks(task, _ASKS_EXAMPLES):
        return ()
    return tuple(f for f in files if not covers(task.writable, f))


def sealable(examples: Mapping[str, frozenset[str] | None]) -> dict[str, list[str]]:
    """The examples held for each file, as sealed (sorted; the files without any left out);
    none at all past `MAX_SEALED` digests, which a ledger line or a snapshot does not hold:
    the files are then held to what they held when the seal was read."""
    found = {n: sorted(d) for n, d in sorted(examples.items()) if d}
    return found if sum(map(len, found.values())) <= MAX_SEALED else {}


def examples_in(path: Path) -> frozenset[str] | None:
    """The digests of the examples a file holds (each its source and its expected output,
    as `doctest` parses them: in a Python file's docstrings, anywhere in any other file);
    None when it cannot be read or parsed, or is too large to read."""
    import ast
    import doctest  # ~18 ms (pdb, unittest): only where a doctest check runs

    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    if path.suffix == ".py":
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        texts = [
            doc
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            if (doc := ast.get_docstring(node, clean=False)) is not None
        ]
    else:
        texts = [text]
    parser = doctest.DocTestParser()
    found: set[str] = set()
    for chunk in texts:
        try:
            examples = parser.get_examples(chunk)
        except ValueError:  # an example doctest itself refuses (bad indentation)
            return None
        for example in examples:
            digest = hashlib.sha256(f"{example.source}\0{example.want}".encode()).hexdigest()
            found.add(digest[:DIGEST_CHARS])
    return frozenset(found)


def examples_lost(
    before: Mapping[str, frozenset[str] | None], workdir: Path, files: Iterable[str]
) -> list[str]:
    """Why a pass of a doctest check must not stand: each of its `files` that held examples
    at the run's start (`before`) and now lacks one of them, or can no longer be read for
    them, named with how many."""
    found: list[str] = []
    for name in files:
        had = before.get(name)
        if not had:
            continue
        now = examples_in(workdir / name)
        if now is None:
            found.append(
                f"doctest examples: `{name}` held {len(had)} example(s) before the work and"
                " cannot be read for them now"
            )
            continue
        lost = len(had - now)
        if lost:
            found.append(
                f"doctest examples: {lost} of the {len(had)} example(s) `{name}` held before"
                " the work are gone or changed (a removed or rewritten example passes the"
                " check without being met); put them back as they were"
            )
    return found
