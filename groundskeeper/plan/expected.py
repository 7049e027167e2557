"""Expected-output files: what a task's check compares the work against (`plan.compared` reads
the check as it will run: `cd`, variables, options), unless the task asks its worker to
change the file — its text makes the file the object of a changing verb ("regenerate
tests/expected.txt"; "make out.txt match tests/expected.txt" asks nothing of the golden) —
or `:writable:` covers it. A run protects those that exist before it starts and says so once
(issue 23); lint's T014 asks that they be hidden. It reads the compiled spec, and the disk
only in `existing_files`.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from pathlib import Path

from groundskeeper.path_patterns import covers, normal_path
from groundskeeper.plan.lint_checks import CHECK_LANGUAGE
from groundskeeper.plan.spec import TaskSpec
from groundskeeper.pytest_files import PYTEST_CONFIGURATION

__all__ = [
    "ASKS",
    "FORBIDS",
    "PYTEST_CONFIGURATION",
    "SILENT",
    "UNSURE",
    "asks_to_change",
    "compared_by",
    "configuration_kept",
    "existing_files",
    "expected_files",
    "expected_inputs",
    "freed",
    "programs_run_by",
    "reading",
    "runs_pytest_check",
    "text_reading",
    "unsure_message",
]

# Verbs with which a task asks for a file to be made or changed, when the file is their
# object ("regenerate tests/expected.txt", "update the golden tests/out.golden") or the
# place a preposition names ("append a line to notes.txt", "bump the version in
# pyproject.toml", "set envlist … in tox.ini").
_CHANGING = frozenset(
    {
        "write", "writes", "rewrite", "rewrites", "update", "updates", "regenerate",
        "regenerates", "generate", "generates", "create", "creates", "change", "changes",
        "edit", "edits", "fix", "fixes", "refresh", "refreshes", "produce", "produces",
        "replace", "replaces", "modify", "modifies", "overwrite", "overwrites", "make",
        "makes", "record", "records", "re-record", "bless", "blesses", "append", "appends",
        "fill", "fills", "extend", "extends", "add", "adds", "save", "saves", "bump", "bumps",
        "set", "sets", "insert", "inserts", "put", "puts", "remove", "removes", "delete",
        "deletes", "raise", "raises", "increase", "increases", "configure", "configures",
        "register", "registers", "pin", "pins", "enable", "enables", "disable", "disables",
        "rename", "renames", "correct", "corrects", "adjust", "adjusts", "amend", "amends",
        "prepend", "prepends", "truncate", "truncates", "empty", "empties", "clear",
        "clears", "reformat", "reformats", "regen", "redo", "rebuild", "rebuilds",
        "implement", "implements", "complete", "completes", "finish", "finishes", "refactor",
        "refactors", "optimize", "optimizes", "optimise", "optimises", "improve", "improves",
        "patch", "patches", "debug", "debugs", "repair", "repairs", "port", "ports",
        "sort", "sorts", "clean", "cleans", "dedupe", "dedupes", "deduplicate",
        "deduplicates", "normalize", "normalizes", "normalise", "normalises", "tidy",
        "tidies", "reorder", "reorders", "format", "formats", "convert", "converts",
    }
)  # fmt: skip
# What a sentence says of a file that asks for it to be changed: "the result file is wrong".
_BEING = frozenset({"is", "are", "was", "looks", "seems", "reads", "says", "has", "still"})
_DEFECTS = frozenset(
    {"wrong", "broken", "incorrect", "outdated", "out-of-date", "stale", "corrupt", "corrupted",
     "buggy", "invalid", "malformed", "unsorted", "bad", "truncated", "garbled", "misformatted"}
)  # fmt: skip
# Words after which a name is what the work is measured by, not what it changes: the verb's
# object has ended ("make out.txt match tests/expected.txt", "so it equals GOLDEN", "in the
# format given in SPEC").
_ENDS_OBJECT = frozenset(
    {
        "match", "matches", "matching", "equal", "equals", "equaling", "compare", "compares",
        "compared", "comparing", "against", "like", "same", "as", "than", "so", "that",
        "until", "unless", "versus", "vs", "per", "according", "reads", "read",
        "reading", "using", "use", "uses", "from", "identical", "equivalent", "similar",
        "consistent", "conform", "conforms", "correspond", "corresponds", "agree", "agrees",
        "given", "described", "specified", "shown", "listed", "defined", "found", "stored",
        "provided", "which", "where", "whose", "by", "based", "following", "follows",
        "follow", "mirror", "mirrors", "reproduce", "reproduces", "copy", "copies",
    }
)  # fmt: skip
# A word after which a name is the place a change goes ("add … to X", "bump … in X").
_PLACES = frozenset({"to", "in", "into", "inside", "within", "onto"})
# Words before a verb's spelling that make it a noun ("the set of lines", "a fix").
_DETERMINERS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "each", "every", "any", "some",
     "its", "their", "his", "her", "our", "your", "my", "one"}
)  # fmt: skip
# What makes a sentence a prohibition, or leaves it unsure whether it asks: a negation, or
# a word that keeps the file as it is ("leave X unchanged", "editing X is forbidden").
_KEEPING = frozenset(
    {
        "not", "never", "no", "nor", "without", "cannot", "dont", "avoid", "avoiding",
        "forbidden", "forbid", "forbids", "prohibited", "prohibit", "disallowed", "unchanged",
        "untouched", "intact", "leave", "keep", "keeps", "preserve", "preserved", "stay",
        "stays", "remain", "remains", "read-only", "readonly", "instead", "except",
        "refrain", "nothing", "neither", "only", "mustnt", "as-is",
    }
)  # fmt: skip
# Words that open a clause of its own after the file's: a negation there is not about it.
_NEW_CLAUSE = frozenset(
    {"so", "that", "then", "which", "until", "because", "where", "when", "while", "whenever",
     "if", "unless", "once", "after", "before", "to"}
)  # fmt: skip
_MAX_BETWEEN = 4  # words between a verb and its object ("write the final answer to X")
_MAX_TO_PLACE = 10  # words between a verb and the place it names ("add the missing line z to X")
_TOKEN = re.compile(r"[^\s,;:()\"`]+|[,;:()]")
# A sentence ends at `.`, `!` or `?` before a space (or the text's end), and at `;`.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|;|\n\s*\n|[.!?]$")
_FILE_LIKE = re.compile(r"^[\w./*?-]*(/[\w.*?-]+|\w\.[A-Za-z*?][\w*?]*)$")


@functools.lru_cache(maxsize=4096)
def compared_by(language: str, text: str) -> tuple[str, ...]:
    """The files (or glob patterns) a check's script compares against, as the check will
    name them when it runs, in order, each once; none when the check does not parse (lint
    says so) or is not a shell check."""
    if language != CHECK_LANGUAGE:
        return ()
    from groundskeeper.plan.compared import compared_files
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        script = parse(text)
    except ShellSyntaxError:
        return ()
    found = (normal_path(name) for name in compared_files(script))
    return tuple(dict.fromkeys(name for name in found if name is not None))


#: How a task's text reads a file: it asks the worker to change it, forbids that, is unsure
#: (it both asks and says not to, or asks in a sentence that negates something), or is
#: silent. Only ASKS frees the file; every other reading keeps it protected.
ASKS, FORBIDS, UNSURE, SILENT = "asks", "forbids", "unsure", "silent"


@functools.lru_cache(maxsize=4096)
def programs_run_by(language: str, text: str) -> tuple[str, ...]:
    """The workdir files a check runs as programs (`python3 check.py`, `sh t.sh`, `./run`,
    a `-m` module's candidates: `plan.programs`' reading): a checker the worker could
    rewrite is a reference like an expected file. None when the check does not parse or
    names a program through an expansion (lint says so)."""
    if language != CHECK_LANGUAGE:
        return ()
    from groundskeeper.plan.programs import command_programs

    found = command_programs(text)
    if isinstance(found, str):
        return ()
    return tuple(dict.fromkeys(p for program in found for p in program.paths))


def asks_to_change(
    task: TaskSpec, path: str, *, anywhere: bool = False, sole_stem: bool = False
) -> bool:
    """Whether the task's title or text (its check aside) plainly asks its worker to change
    `path`: some sentence makes it the object of a changing verb, or the place a change goes
    ("add … to X"), and no sentence naming it negates or keeps it (`reading`). With
    `anywhere`, a file of that name in any directory (`tests/conftest.py` for `conftest.py`).
    `sole_stem`: no other file in view shares the file's stem, so the stem alone names it
    ("update the report" for `out/report.txt`)."""
    return reading(task, path, anywhere=anywhere, sole_stem=sole_stem) == ASKS


def reading(task: TaskSpec, path: str, *, anywhere: bool = False, sole_stem: bool = False) -> str:
    """How the task's title and text (its check aside) read `path`: ASKS, FORBIDS, UNSURE or
    SILENT — one reading for lint and the run (fail-closed: a sentence naming the file that
    negates anything, or keeps it as it is, is never read as asking)."""
    heading = task.heading
    check = heading.check.text if heading.check is not None else ""
    body = heading.body.replace(check, "") if check else heading.body
    text = "\n".join([heading.title, body])
    return text_reading(text, path, anywhere=anywhere, sole_stem=sole_stem)


@functools.lru_cache(maxsize=4096)
def text_reading(text: str, path: str, *, anywhere: bool = False, sole_stem: bool = False) -> str:
    """`reading` of a text: each sentence naming `path` asks, keeps (forbids), both (unsure)
    or neither; a text that asks in one sentence and keeps in another is unsure."""
    found = {
        _sentence_reading(s, path, anywhere=anywhere, sole_stem=sole_stem) for s in _sentences(text)
    }
    if UNSURE in found or {ASKS, FORBIDS} <= found:
        return UNSURE
    for kind in (ASKS, FORBIDS):
        if kind in found:
            return kind
    return SILENT


def _sentences(text: str) -> list[str]:
    """The text's sentences; a line that does not end one and a lowercase line after it
    (a wrapped sentence) read together, a list item on its own."""
    lines: list[str] = []
    for raw in text.replace("\u2019", "'").splitlines():
        line = raw.strip()
        if not line:
            lines.append("")
            continue
        if lines and lines[-1] and lines[-1][-1] not in ".!?:;" and line[0].islower():
            lines[-1] += " " + line
        else:
            lines.append(line)
    return [s for line in lines for s in _SENTENCE.split(line) if s.strip()]


def _words(sentence: str) -> list[str]:
    words = []
    for token in _TOKEN.findall(sentence):
        word = token.strip("'").rstrip(".!?").lower()
        if word:
            words.append(word)
    return words


def _keeps(word: str) -> bool:
    return word in _KEEPING or "n't" in word


def _aliased(sentence: str, path: str, *, sole_stem: bool = False) -> str:
    """The sentence with the file's other names spelled as `path`: its stem as a word followed
    by "file" ("the result file" for `result.txt`), and the stem alone when it cannot mean
    anything else — a name with no suffix, one whose stem is spelled in capitals
    (`CHANGELOG.md`: "the changelog", `Makefile`: "the makefile"), or, with `sole_stem`, one
    no other file in view shares its stem with ("the report" for `out/report.txt` when the
    check read no other `report.*`); case-insensitive."""
    name = path.rsplit("/", 1)[-1]
    stem = name.split(".", 1)[0] if not name.startswith(".") else name
    if not stem or not re.fullmatch(r"[\w-]+", stem):
        return sentence
    sentence = re.sub(rf"(?<![\w./-])(?i:{re.escape(stem)})\s+(?i:file)\b", path, sentence)
    if name == stem or (len(stem) > 2 and (stem.isupper() or sole_stem)):
        sentence = re.sub(rf"(?<![\w./-])(?i:{re.escape(stem)})(?![\w/-]|\.\w)", path, sentence)
    return sentence


def _defective(words: list[str], at: int) -> bool:
    """Whether the sentence says the file at `at` is wrong ("the result file is wrong", "X is
    still out-of-date"): a defect the work is to mend."""
    rest = words[at + 1 : at + 5]
    if any(w in _SUPPOSING for w in words[:at]):
        return False  # "if X looks wrong, tell me": a case to report, not a defect to mend
    return bool(rest) and rest[0] in _BEING and any(w in _DEFECTS for w in rest[1:])


#: words that make what follows a supposition or a thing to report ("if X looks wrong, tell
#: me", "let me know whether X is outdated"), not a defect the text asks to mend
_SUPPOSING = frozenset({"if", "whether", "unless", "when", "tell", "report", "know", "ask"})
#: words that open a clause saying what the work is for ("fix the build so build.log …")
_PURPOSE = frozenset({"so", "until"})
#: verbs that say what a file holds, in such a clause ("… so build.log has no errors")
_STATE = frozenset({
    "has", "have", "contains", "contain", "shows", "show", "says", "say", "reads", "read",
    "holds", "hold", "lists", "list", "matches", "match", "gets", "get", "ends",
})  # fmt: skip


def _wanted_state(words: list[str], at: int) -> bool:
    """Whether the sentence wants the file at `at` to reach a state ("fix the build so
    build.log has no errors", "… until out.txt shows 42"): its name opens a purpose clause
    and a verb of state follows it, so changing the file is the work."""
    before = words[max(0, at - 3) : at]
    return any(w in _PURPOSE for w in before) and at + 1 < len(words) and words[at + 1] in _STATE


def _sentence_reading(sentence: str, path: str, *, anywhere: bool, sole_stem: bool) -> str:
    sentence = _aliased(sentence, path, sole_stem=sole_stem)
    if path.lower() not in sentence.lower():
        return SILENT
    words = _words(sentence)
    wanted = path.lower().removeprefix("./")
    at = [
        i
        for i, w in enumerate(words)
        if w.removeprefix("./") == wanted or (anywhere and w.endswith("/" + wanted))
    ]
    if not at:
        return SILENT
    if any(_keeps(w) for w in words[: at[-1]]):
        return FORBIDS  # "don't modify X", "without changing X", "X must stay as it is"
    asks = any(
        _object_of_change(words, i)
        or _place_first(words, i)
        or _defective(words, i)
        or _wanted_state(words, i)
        for i in at
    )
    if _wanted_state(words, at[-1]):
        return ASKS  # what follows says the state wanted ("… has no errors"), not a keeping
    if any(_keeps(w) for w in _clause_after(words, at[-1])):
        return UNSURE if asks else FORBIDS  # "regenerate X, not Y": which does it keep?
    return ASKS if asks else SILENT


def _clause_after(words: list[str], at: int) -> list[str]:
    """The words after `at` up to the next clause of its own ("… so that it accepts a
    definition without a title" is about the program's behaviour, not the file)."""
    rest = words[at + 1 :]
    for i, word in enumerate(rest):
        if word in _NEW_CLAUSE:
            return rest[:i]
    return rest


def _is_verb(words: list[str], at: int) -> bool:
    """Whether `words[at]` is a changing verb, not a noun of the same spelling ("a fix")."""
    return words[at] in _CHANGING and (at == 0 or words[at - 1] not in _DETERMINERS)


def _object_of_change(words: list[str], at: int) -> bool:
    """Whether the name at `at` is the object of a changing verb before it, or the place a
    preposition after such a verb names ("add the missing line z to X")."""
    if at + 1 < len(words) and words[at + 1] in _BEING:
        return False  # "clean up the generator and X is the reference": X opens a clause
    place = at > 0 and words[at - 1] in _PLACES
    limit = _MAX_TO_PLACE if place else _MAX_BETWEEN
    between = 0
    for back in range(at - 1, -1, -1):
        word = words[back]
        if _is_verb(words, back):
            return True
        if word in _ENDS_OBJECT or word in (":", "(", ")"):
            return False
        if word in ("and", "or", ","):
            continue  # a list of objects ("to a.txt and b.txt")
        if _FILE_LIKE.match(word) and not word.startswith("["):
            if place:
                return False  # the verb's object is that file ("write out.txt with … in X")
            continue
        between += 1
        if between > limit:
            return False
    return False


def _place_first(words: list[str], at: int) -> bool:
    """Whether the name at `at` is the place a sentence opens with before its changing verb
    ("In pyproject.toml, bump the version to 0.2"), no other file named after."""
    if at == 0 or words[at - 1] not in _PLACES or (at > 1 and words[at - 2] not in (",",)):
        return False
    rest = words[at + 1 :]
    if len(rest) < 2 or rest[0] != ",":
        return False
    verb = 2 if rest[1] == "please" and len(rest) > 2 else 1
    if rest[verb] not in _CHANGING:
        return False
    return not any(_FILE_LIKE.match(w) and not w.startswith("[") for w in rest[verb + 1 :])


def unsure_message(task_id: str, path: str) -> str:
    """What lint (T028) and the run (F002) say of a task whose text is unsure whether it asks
    to change `path`: it stays protected, and how to let the worker change it."""
    return (
        f"the text of task {task_id} asks to change `{path}` but also negates or keeps"
        " something in the same sentence, so it is not read as asking: the file stays"
        f" protected; if the worker should change it, add `:writable: {path}` to that task"
    )


def freed(spec_tasks: tuple[TaskSpec, ...] | list[TaskSpec], path: str) -> bool:
    """Whether some task of the plan may change `path`: `:writable:` covers it, or its text
    asks for the change (a sibling whose job is to regenerate the golden)."""
    return any(covers(t.writable, path) or asks_to_change(t, path) for t in spec_tasks)


def expected_files(task: TaskSpec) -> tuple[str, ...]:
    """The task's expected-output files (a glob stays a pattern): compared against by its
    check, or run by it as a program (`programs_run_by`), neither asked to be changed by its
    text nor freed by `:writable:`."""
    check = task.check
    if check is None:
        return ()
    named = compared_by(check.language, check.text) + programs_run_by(check.language, check.text)
    return tuple(
        path
        for path in dict.fromkeys(named)
        if not covers(task.writable, path) and not asks_to_change(task, path)
    )


def existing_files(base: Path, name: str) -> list[str]:
    """The regular files under `base` that `name` (a path, or a glob pattern) names now,
    relative and `/`-separated; never inside a control directory."""
    if not any(c in name for c in "*?["):
        return [name] if (base / name).is_file() else []
    try:
        found = sorted(p for p in base.glob(name) if p.is_file())
    except (ValueError, OSError):
        return []
    relative = (p.relative_to(base).as_posix() for p in found)
    return [r for r in relative if ".groundskeeper" not in r.casefold().split("/")]


@functools.lru_cache(maxsize=4096)
def _runs_pytest(language: str, text: str) -> bool:
    if language != CHECK_LANGUAGE:
        return False
    from groundskeeper.plan.compared import runs_pytest
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        return runs_pytest(parse(text))
    except ShellSyntaxError:
        return False


def runs_pytest_check(task: TaskSpec) -> bool:
    """Whether the task's check runs pytest itself (`python3 -m pytest …`)."""
    return task.check is not None and _runs_pytest(task.check.language, task.check.text)


def configuration_kept(tasks: tuple[TaskSpec, ...] | list[TaskSpec]) -> tuple[str, ...]:
    """The pytest configuration patterns no worker of the run may write, when some task's
    check runs pytest itself: each that no task frees (`:writable:` covering the name, or a
    task's text asking to change a file of that name)."""
    if not any(runs_pytest_check(t) for t in tasks):
        return ()
    return tuple(
        pattern
        for pattern in PYTEST_CONFIGURATION
        if not any(
            covers(t.writable, pattern) or asks_to_change(t, pattern, anywhere=True) for t in tasks
        )
    )


def expected_inputs(
    tasks: tuple[TaskSpec, ...] | list[TaskSpec], base: Path, known: frozenset[str] | None = None
) -> dict[str, list[str]]:
    """Each expected file that exists (under `base` now; `known`: among these names, as a
    seal recorded them) and is protected without a pattern naming it (not covered by the
    comparing task's own `:protect:` or `:hide:`) → the tasks comparing against it. A run
    protects these (`supervisor.run_paths`), and an agent's session the same ones."""
    found: dict[str, list[str]] = {}
    for task in tasks:
        for pattern in expected_files(task):
            if known is None:
                names = existing_files(base, pattern)
            elif any(c in pattern for c in "*?["):
                names = sorted(n for n in known if fnmatch.fnmatchcase(n, pattern))
            else:
                names = [pattern] if pattern in known else []
            for name in names:
                if covers(task.protect, name) or covers(task.hide, name):
                    continue
                comparing = found.setdefault(name, [])
                if task.task_id not in comparing:
                    comparing.append(task.task_id)
    return found
