"""Artifact contracts judged: a task's `Contract`s (read by `plan.contract_syntax`) judged
after the worker claims into `ContractVerdict`s, each with a reason code (C001…). A contract
type is one entry of `REGISTRY` (`register`): its shape (name, arity, argument rules, the
files it protects) and its judge. It reads the worker's files only through the worker tools'
path rules, with a size limit, and never runs them; the record it consults is
`attempt_record`'s. It does not decide task states and does not seal anything.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from groundskeeper.acceptance.attempt_record import AttemptRecord, ShCall
from groundskeeper.acceptance.check import WITHHELD
from groundskeeper.acceptance.suite import Baseline
from groundskeeper.errors import GroundskeeperError
from groundskeeper.path_patterns import PathPatterns, normal_path
from groundskeeper.plan.contract_syntax import (
    SHAPES,
    Contract,
    ContractShape,
    add_shape,
    any_args,
    no_files,
    suite_args,
)
from groundskeeper.pytest_files import named_as_test

__all__ = [
    "CODES",
    "READ_LIMIT",
    "REGISTRY",
    "ContractContext",
    "ContractFailure",
    "ContractType",
    "ContractVerdict",
    "WorkFiles",
    "judge_contracts",
    "register",
]

#: The most of a file a contract reads; a larger file fails its contract (C002).
READ_LIMIT = 4 * 1024 * 1024
#: A verdict's message is cut to this many characters (a schema error quotes the value).
MESSAGE_LIMIT = 1000
#: A verdict's detail longer than this (as JSON) is sealed by its hash only.
DETAIL_INLINE = 8 * 1024
SOFT = "soft"

#: Every reason code a contract verdict may carry, and what it means.
CODES: dict[str, str] = {
    "C001": "the file is missing, not a regular file, or out of the workdir's reach",
    "C002": "the file is larger than the read limit",
    "C003": "the file is empty (or only whitespace)",
    "C004": "the file is not valid in its format (or not UTF-8)",
    "C005": "the file does not match its JSON schema",
    "C006": "the JSON schema itself is missing or not a valid schema",
    "C007": "the Markdown file lacks a required section heading",
    "C008": "the record does not show this attempt's tool calls changing the path",
    "C009": "what a tool call changed is unknown (not in the record), so `changed` cannot hold",
    "C010": "the record shows no matching command that ran and exited 0 in this attempt",
    "C011": "the contract line itself is malformed (lint reports it before a run)",
    "C012": "the workflow script fails script validation",
    "C020": "the test suite did not pass: a test failed or errored, or pytest did not exit 0",
    "C021": "configuration the worker could have written (conftest.py, pytest.ini, …) is there",
    "C022": "the collected tests are not the ones collected before any work (red-first)",
    "C023": "tests skipped, xfailed or deselected beyond the red-first run",
    "C024": "the suite's pass-or-fail machinery (assertions, pytest's runner) was replaced",
    "C025": "the suite gave no complete record: it exited early, crashed or hit a limit",
    "C026": "no red-first record of the suite, or fewer tests passed than --min asks",
    "C027": "a value of the work that compares equal to anything decided an assertion",
    "C028": "a pytest plugin or hook implementation not the suite's configuration's ran",
    "C090": "the contract's judge could not decide on this input (fail-closed)",
}  # a new type adds its own codes here (`CODES["C012"] = …`) beside its `register` call


class WorkFiles(Protocol):
    """How a contract reads the workdir: the worker `Toolbox`'s own path rules."""

    @property
    def workdir(self) -> Path: ...

    def read_limited(self, raw: str, limit: int) -> bytes: ...


@dataclass(frozen=True, slots=True)
class ContractVerdict:
    contract: Contract
    code: str | None  # None: the contract holds
    message: str
    detail: Mapping[str, Any] = field(default_factory=dict)  # JSON-native, for the record

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def hard_failure(self) -> bool:
        return self.code is not None and not self.contract.soft

    @property
    def reason(self) -> str:
        """The verdict as a task's reason: `C005: json-schema s.json out.json: …`."""
        return f"{self.code}: {self.contract.text}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """As sealed: the detail as JSON text (it may hold floats and non-ASCII names, which a
        ledger body may not), message and detail bounded so a step always fits its line."""
        detail = json.dumps(dict(self.detail), sort_keys=True, ensure_ascii=True, default=repr)
        return {
            "contract": self.contract.text,
            "type": self.contract.kind,
            "soft": self.contract.soft,
            "ok": self.ok,
            "code": self.code,
            "message": self.message,
            "detail_json": detail if len(detail) <= DETAIL_INLINE else None,
            "detail_sha256": hashlib.sha256(detail.encode("ascii")).hexdigest(),
        }


@dataclass(frozen=True, slots=True)
class ContractContext:
    """What a judge may consult: the workdir through the tools' rules, this attempt's sealed
    record, and the SHA-256 each file a `changed` pattern covered had when the task first
    started (None: absent), across attempts and runs."""

    files: WorkFiles
    record: AttemptRecord
    started: Mapping[str, str | None] = field(default_factory=dict)
    workdir: Path | None = None  # where a `pytest` contract runs the suite
    baselines: Mapping[str, Baseline] = field(default_factory=dict)  # by contract text
    protect: tuple[str, ...] = ()  # the task's protected patterns (a suite's configuration)
    hidden: tuple[str, ...] = ()  # the run's hidden inputs: what a failure must never show
    unwatched: tuple[str, ...] = ()  # `changed` patterns whose first start is not known
    # test files a worker was entitled to add under a `pytest` contract's paths (its text
    # asked for them, or `:writable:`): their new tests are judged apart (`_pytest`)
    added: tuple[str, ...] = ()
    # test module names there a worker may make when its text asks for tests (`plan
    # .suite_paths.suite_tests_new`): the files they cover that the red-first suite did not
    # have are added tests, judged apart as `added`'s
    new_tests: tuple[str, ...] = ()
    # test files there a task's text asks to remove by name (`plan.suite_paths
    # .suite_files_removed`), and the tests it asks to remove from one, as `FILE::NAME`
    # (`suite_tests_removed`): once gone, their red-first tests are not missed (C022)
    removed: tuple[str, ...] = ()
    # (file, old, new) for each test a task's text asks to rename (`plan.suite_paths
    # .suite_tests_renamed`): a red-first test that runs by the new name is not gone (C022)
    renamed: tuple[tuple[str, str, str], ...] = ()
    # which later task of an ORDERED sequence a red-first test still failing the same way is
    # left to (`RunPaths.left_to`, adversary-19 F22); None: the task has no later one
    left_to: Callable[[str], str | None] | None = None
    # why a pass of a `pytest` contract must not stand, given the files the suite read
    # (`RunPaths.inputs_read` for the task, as for a check's pass): a file there before the
    # work that a worker not entitled to it changed — the tests' data or helper module,
    # which lie outside the contract's test paths (adversary-17 F6, F7)
    inputs_changed: Callable[[tuple[str, ...] | None], list[str]] | None = None

    def named(self, pattern: str) -> list[str]:
        """The files a path argument names (`protect.named_files`: the one matcher's reading,
        a plain path as spelled first); C001 when it names none, or too many to judge."""
        from groundskeeper.acceptance.protect import named_files

        try:
            found = named_files(self.files.workdir, pattern)
        except ValueError as exc:
            raise ContractFailure("C001", f"`{pattern}`: {exc}") from None
        if not found:
            raise ContractFailure("C001", f"`{pattern}` names no file")
        return found

    def read(self, raw: str) -> bytes:
        """The file's bytes; `ContractFailure` C001/C002 when it cannot be read."""
        from groundskeeper.acceptance.toolbox import FileTooLarge

        try:
            return self.files.read_limited(raw, READ_LIMIT)
        except FileTooLarge as exc:
            raise ContractFailure("C002", f"{exc}; contracts read at most {READ_LIMIT}") from None
        except FileNotFoundError:
            raise ContractFailure("C001", f"`{raw}` does not exist") from None
        except IsADirectoryError:
            raise ContractFailure("C001", f"`{raw}` is a folder, not a file") from None
        except (OSError, ValueError, GroundskeeperError) as exc:
            raise ContractFailure("C001", f"`{raw}` cannot be read: {exc}") from None

    def read_text(self, raw: str) -> str:
        try:
            return self.read(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ContractFailure("C004", f"`{raw}` is not UTF-8 text: {exc}") from None

    def sha256_now(self, raw: str) -> str | None:
        try:
            return hashlib.sha256(self.files.read_limited(raw, READ_LIMIT)).hexdigest()
        except (OSError, ValueError, GroundskeeperError):
            return None


class ContractFailure(GroundskeeperError):
    """Raised inside a judge to fail its contract with a code; turned into a verdict."""

    def __init__(self, code: str, message: str, detail: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = dict(detail or {})


Judge = Callable[[Contract, ContractContext], "ContractVerdict | str"]


@dataclass(frozen=True, slots=True)
class ContractType:
    """One kind of contract: its shape (`plan.contract_syntax.ContractShape`: name, usage,
    arity, argument rules, protected and watched files) and its `judge`, which returns a
    message on success (or a full verdict) and raises `ContractFailure` on failure."""

    name: str
    usage: str
    min_args: int
    max_args: int | None
    judge: Judge
    check_args: Callable[[tuple[str, ...]], str | None] = any_args
    protects: Callable[[tuple[str, ...]], tuple[str, ...]] = no_files
    schemas: Callable[[tuple[str, ...]], tuple[str, ...]] = no_files
    watches: Callable[[tuple[str, ...]], tuple[str, ...]] = no_files

    @property
    def shape(self) -> ContractShape:
        return ContractShape(
            self.name, self.usage, self.min_args, self.max_args,
            self.check_args, self.protects, self.schemas, self.watches,
        )  # fmt: skip


REGISTRY: dict[str, ContractType] = {}


def register(kind: ContractType) -> ContractType:
    """Add a contract type; adding one is this one call (lint and the plan's reader learn its
    shape, the pipeline its judge, the docs' list of types both)."""
    add_shape(kind.shape)
    REGISTRY[kind.name] = kind
    return kind


def _bind(name: str, judge: Judge) -> None:
    """A built-in type: its shape is declared where plans are read, its judge here."""
    shape = SHAPES[name]
    REGISTRY[name] = ContractType(
        shape.name, shape.usage, shape.min_args, shape.max_args, judge,
        shape.check_args, shape.protects, shape.schemas, shape.watches,
    )  # fmt: skip


def judge_contracts(
    contracts: Iterable[Contract], context: ContractContext
) -> list[ContractVerdict]:
    """Every contract's verdict, in order; a judge's own bug is a failure, never a pass."""
    verdicts: list[ContractVerdict] = []
    for contract in contracts:
        kind = REGISTRY.get(contract.kind)
        if kind is None:
            verdicts.append(ContractVerdict(contract, "C011", "unknown contract type"))
            continue
        try:
            said = kind.judge(contract, context)
        except ContractFailure as exc:
            message = _bounded(exc.message)
            verdicts.append(ContractVerdict(contract, exc.code, message, exc.detail))
            continue
        except Exception as exc:  # a judge that cannot decide on this input: failed, never a pass
            message = _bounded(f"the contract could not be judged: {type(exc).__name__}: {exc}")
            verdicts.append(ContractVerdict(contract, "C090", message))
            continue
        if not isinstance(said, ContractVerdict):
            said = ContractVerdict(contract, None, said)
        verdicts.append(replace(said, message=_bounded(said.message)))
    return verdicts


def _bounded(message: str) -> str:
    if len(message) <= MESSAGE_LIMIT:
        return message
    return message[:MESSAGE_LIMIT] + f"… ({len(message) - MESSAGE_LIMIT} more characters)"


def each_file(index: int, judge: Judge) -> Judge:
    """`judge` (of one file, its argument `index`) for a contract whose argument `index` is a
    path pattern: judged on every file the pattern names (`ContractContext.named`); the first
    that fails fails the contract, naming it."""

    def judged(contract: Contract, context: ContractContext) -> ContractVerdict | str:
        pattern = contract.args[index]
        files = context.named(pattern)
        said: list[tuple[str, ContractVerdict | str]] = []
        for path in files:
            args = (*contract.args[:index], path, *contract.args[index + 1 :])
            said.append((path, judge(replace(contract, args=args), context)))
        if len(said) == 1:
            one = said[0][1]
            return replace(one, contract=contract) if isinstance(one, ContractVerdict) else one
        held = [
            {"path": path, "message": v.message if isinstance(v, ContractVerdict) else v,
             **({"detail": dict(v.detail)} if isinstance(v, ContractVerdict) else {})}
            for path, v in said
        ]  # fmt: skip
        message = f"`{pattern}`: all {len(files)} files hold ({', '.join(files)})"
        return ContractVerdict(contract, None, message, {"files": held})

    return judged


# -- the file contracts ---------------------------------------------------------------------------


def _non_empty(contract: Contract, context: ContractContext) -> str:
    (path,) = contract.args
    data = context.read(path)
    if not data.strip():
        raise ContractFailure("C003", f"`{path}` is empty" if not data else
                              f"`{path}` holds only whitespace")  # fmt: skip
    return f"`{path}` has {len(data)} bytes"


def parse_format(name: str, text: str) -> object:
    """The document, or ValueError saying where it is malformed."""
    if name == "json":
        return json.loads(text, parse_constant=_no_constant)
    if name == "yaml":
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(str(exc).replace("\n", " ")) from None
    if name == "toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(str(exc)) from None
    if name == "csv":
        return _csv_rows(text)
    raise ValueError(f"unknown format {name}")


def _no_constant(name: str) -> object:
    raise ValueError(f"`{name}` is not JSON")


def _csv_rows(text: str) -> list[list[str]]:
    import csv
    import io

    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise ValueError(f"line {_csv_line(text, exc)}: {exc}") from None
    rows = [r for r in rows if r]  # blank lines are not records
    if not rows:
        raise ValueError("no rows")
    width = len(rows[0])
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise ValueError(f"record {number} has {len(row)} fields, the header has {width}")
    return rows


def _csv_line(text: str, exc: Exception) -> str:
    match = re.search(r"line (\d+)", str(exc))
    return match.group(1) if match else "?"


def _format(contract: Contract, context: ContractContext) -> str:
    name, path = contract.args
    text = context.read_text(path)
    if not text.strip():
        raise ContractFailure("C004", f"`{path}` is empty, not {name}")
    try:
        parse_format(name, text)
    except (ValueError, RecursionError) as exc:
        raise ContractFailure("C004", f"`{path}` is not valid {name}: {exc}") from None
    return f"`{path}` is valid {name}"


def _json_schema(contract: Contract, context: ContractContext) -> str:
    import jsonschema
    import referencing.exceptions

    schema_path, path = contract.args
    try:
        schema = json.loads(context.read_text(schema_path), parse_constant=_no_constant)
    except ContractFailure as exc:
        raise ContractFailure("C006", f"the schema: {exc.message}") from None
    except (ValueError, RecursionError) as exc:
        raise ContractFailure("C006", f"the schema `{schema_path}` is not JSON: {exc}") from None
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ContractFailure(
            "C006", f"`{schema_path}` is not a valid schema: {exc.message}"
        ) from None
    except Exception as exc:  # a schema that is not even an object: validator_for refuses it
        raise ContractFailure("C006", f"`{schema_path}` is not a valid schema: {exc}") from None
    # `format` is an assertion here, checked by the library's own checker for the draft
    checker = validator_class.FORMAT_CHECKER
    unknown = sorted(set(_formats(schema)) - set(checker.checkers))
    if unknown:
        raise ContractFailure(
            "C006",
            f"`{schema_path}` names a format that cannot be checked: {', '.join(unknown)}"
            f" (known: {', '.join(sorted(checker.checkers))})",
        )
    validator = _schema_validator(schema_path, schema, validator_class, context)
    try:
        document = json.loads(context.read_text(path), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ContractFailure("C004", f"`{path}` is not JSON: {exc}") from None
    try:
        errors = sorted(
            validator.iter_errors(document),
            key=lambda e: [str(p) for p in e.absolute_path],
        )
    except referencing.exceptions.Unresolvable as exc:
        raise ContractFailure(
            "C006", f"`{schema_path}` has a reference that cannot be resolved: {exc}"
        ) from None
    except RecursionError:
        raise ContractFailure("C006", f"`{schema_path}` recurses without end") from None
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(the document)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ContractFailure(
            "C005", f"`{path}` does not match `{schema_path}` at {where}: {first.message}{more}"
        )
    return f"`{path}` matches `{schema_path}`"


_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples"})  # data, never a subschema


def _schema_validator(
    schema_path: str, schema: object, validator_class: Any, context: ContractContext
) -> Any:
    """The validator for `schema`, its relative `$ref`s resolved from its own folder in the
    workdir (`plan.schema_refs`, which lint's T016 asks too): every file they reach is read
    now into a registry that fetches nothing else."""
    import referencing
    import referencing.jsonschema

    from groundskeeper.plan.schema_refs import BASE_URI, SchemaRefError, schema_files

    def read(p: str) -> str | None:
        try:
            return context.read_text(p)
        except ContractFailure:
            return None

    hidden = frozenset(context.hidden)
    try:
        files = schema_files(schema_path, schema, read, lambda p: p in hidden)
    except SchemaRefError as exc:
        raise ContractFailure("C006", str(exc)) from None
    checker = validator_class.FORMAT_CHECKER
    for p, contents in files.items():
        try:
            validator_class.check_schema(contents)
        except Exception as exc:  # a SchemaError, or not even an object
            why = getattr(exc, "message", None) or str(exc)
            raise ContractFailure("C006", f"`{p}` is not a valid schema: {why}") from None
        unknown = sorted(set(_formats(contents)) - set(checker.checkers))
        if unknown:
            raise ContractFailure(
                "C006", f"`{p}` names a format that cannot be checked: {', '.join(unknown)}"
            )
    if not files:
        return validator_class(schema, format_checker=checker)
    meta = validator_class.META_SCHEMA
    dialect = str(meta.get("$id") or meta.get("id") or "").rstrip("#")
    spec = referencing.jsonschema.specification_with(dialect)
    resources = [
        (BASE_URI + p, referencing.Resource.from_contents(c, default_specification=spec))
        for p, c in {schema_path: schema, **files}.items()
    ]
    registry: Any = referencing.Registry().with_resources(resources)
    wrapper = {"$ref": BASE_URI + schema_path}
    return validator_class(wrapper, registry=registry, format_checker=checker)


def _formats(schema: object) -> list[str]:
    """Every `format` a schema asserts, at any depth (its data keywords aside)."""
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("format"), str):
                found.append(node["format"])
            stack.extend(v for k, v in node.items() if k not in _NOT_SCHEMAS)
        elif isinstance(node, list):
            stack.extend(node)
    return found


def markdown_headings(text: str) -> list[str]:
    """The text of the document's own headings as a CommonMark renderer shows them (ATX and
    setext, not nested in a quote or a list): nothing in a code block, an HTML block or a
    comment counts, whatever it looks like."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    found: list[str] = []
    for opened, inline in itertools.pairwise(tokens):
        if opened.type == "heading_open" and opened.level == 0 and inline.type == "inline":
            found.append("".join(_inline_text(inline.children or ())).strip())
    return found


def _inline_text(children: Iterable[Any]) -> Iterator[str]:
    """What a heading's inline parts read as: text and code, without the markup."""
    for child in children:
        if child.type in ("text", "code_inline"):
            yield child.content
        elif child.type in ("softbreak", "hardbreak"):
            yield " "


#: A heading's enumerator: "1.", "2)", "1.2", "A.", "IV." before its name.
_ENUMERATOR = re.compile(r"(?:\d+(?:\.\d+)*[.)]?|[A-Za-z][.)]|[IVXLCivxlc]+[.)])\s+")


def section_name(heading: str) -> str:
    """A heading as the section it names: case-folded, without an enumerator before it or
    punctuation around it ("## 1. Install:" is the Install section)."""
    name = heading.strip()
    name = _ENUMERATOR.sub("", name, count=1) if _ENUMERATOR.match(name) else name
    return name.strip(_PUNCTUATION + " \t").casefold()


_PUNCTUATION = "".join(chr(c) for c in range(0x80) if not chr(c).isalnum() and not chr(c).isspace())


def _markdown_sections(contract: Contract, context: ContractContext) -> str:
    path, *wanted = contract.args
    found = markdown_headings(context.read_text(path))
    names = {section_name(h) for h in found}
    missing = [w for w in wanted if section_name(w) not in names]
    if missing:
        shown = ", ".join(f'"{m}"' for m in missing)
        seen = ", ".join(f'"{h}"' for h in found[:_SHOWN_HEADINGS])
        more = f" and {len(found) - _SHOWN_HEADINGS} more" if len(found) > _SHOWN_HEADINGS else ""
        headings = f"its headings: {seen}{more}" if found else "it has no heading"
        raise ContractFailure(
            "C007", f"`{path}` has no section {shown} ({headings})", {"missing": missing}
        )
    return f"`{path}` has every section"


#: Headings a failure names (a long document's first ones).
_SHOWN_HEADINGS = 12


# -- the record contracts -----------------------------------------------------------------------


def _changed(contract: Contract, context: ContractContext) -> str:
    """Each path: a tool call of this attempt changed it (write_file's path, or what the
    sandbox wrote in an `sh` call), and its content now differs from what it held when the
    task first started (across attempts and resumes). Both, so that neither a `touch`, nor a
    file moved away and back, nor content put back as it was before any work, nor another
    task's write counts. A plain path names that file; a pattern or a directory holds when
    some file it covers holds."""
    found, unknown = context.record.changed()
    missing: list[str] = []
    same: list[str] = []
    lost = [raw for raw in contract.args if raw in context.unwatched]
    if lost:
        raise ContractFailure(
            "C009",
            f"what {', '.join(lost)} held when the task first started is not known (more files"
            " than can be watched, or a sealed list the control directory no longer holds)",
        )
    for raw in contract.args:
        candidates, before = _watched_by(raw, found, context)
        if not candidates:
            missing.append(raw)
        elif all(context.sha256_now(p) == context.started.get(p, before) for p in candidates):
            same.append(raw)
    if missing and unknown:
        calls = ", ".join(str(i) for i in unknown)
        raise ContractFailure(
            "C009",
            f"the record does not show {', '.join(missing)} changed, and what tool call(s)"
            f" {calls} changed is unknown (the record holds no list of its changes)",
        )
    if missing:
        raise ContractFailure(
            "C008",
            f"the record shows no tool call of this attempt changing {', '.join(missing)}",
            {"missing": missing},
        )
    if same:
        raise ContractFailure(
            "C008",
            f"{', '.join(same)}: touched, but the content is the same as when the task first"
            " started",
            {"unchanged": same},
        )
    return "changed in this attempt: " + ", ".join(contract.args)


def _watched_by(
    raw: str, found: set[str], context: ContractContext
) -> tuple[list[str], str | None]:
    """The changed paths a `changed` argument asks about — a plain path that is not a
    directory as spelled, else every changed path the pattern covers — and what a path
    held at the first start when the starts list none: for a plain path, a start never
    taken (no content equals it); for a pattern, absent (every file it covered then is
    listed)."""
    from groundskeeper.acceptance.protect import is_plain

    spelled = normal_path(raw.lstrip("/"))
    if spelled is not None and is_plain(raw) and not (context.files.workdir / spelled).is_dir():
        return ([spelled] if spelled in found else []), "unrecorded"
    rules = PathPatterns([raw])
    return sorted(p for p in found if rules.covers(p)), None


def _ran(contract: Contract, context: ContractContext) -> str:
    from groundskeeper.acceptance.attempt_record import chain_commands, counted_commands
    from groundskeeper.plan.properties import command_matches, noop_option

    (pattern,) = contract.args
    failed: list[str] = []
    for call in context.record.sh_calls():
        if call.cmd is None:
            continue
        idle = next(
            (
                option
                for c in chain_commands(call.cmd) or ()
                if fnmatch.fnmatchcase(c, pattern) and (option := noop_option(pattern, c))
            ),
            None,
        )  # the pattern's command, run so that it does none of its work: not counted
        if idle is not None:
            failed.append(f"`{call.cmd}` (its option `{idle}` makes it do none of its work)")
            continue
        commands = counted_commands(call.cmd)
        if commands is None or not any(command_matches(pattern, c) for c in commands):
            members = chain_commands(call.cmd) or []
            if any(command_matches(pattern, c) for c in members):
                failed.append(
                    f"`{call.cmd}` (an earlier command of its chain changes what it runs on,"
                    " or its input is redirected: it does not count)"
                )
            continue
        if call.exit_status == 0:
            moved = _changed_after(call, context.record)
            if moved is None:
                return f"`{call.cmd}` ran and exited 0 (tool call {call.index})"
            failed.append(f"`{call.cmd}` (what it ran on changed after it: {moved})")
            continue
        status = "was stopped" if call.exit_status is None else f"exited {call.exit_status}"
        failed.append(f"`{call.cmd}` {status}")
    also = f"; the record shows {'; '.join(failed)}" if failed else ""
    raise ContractFailure(
        "C010",
        f"no command matching `{pattern}` ran and exited 0 in this attempt{also} (a command"
        " counts when it is the whole line, or part of a chain joined only by && with no"
        " earlier member that changes state: cd, export, a write)",
    )


def _changed_after(call: ShCall, record: AttemptRecord) -> str | None:
    """What a later call of the attempt changed among the files this run read or its line
    names (a folder it names covers what is under it), if anything: then the run says
    nothing of the files as they end (adversary-28 F3: a failing test copied aside and
    removed before `python3 -m pytest -q tests`, and copied back after it). A later call
    whose writes the record does not hold counts as changing them."""
    import posixpath
    import shlex

    later: dict[str, int] = {}
    blind: int | None = None
    for index, _tool, paths in record.writes():
        if index <= call.index:
            continue
        if paths is None:
            blind = index if blind is None else blind
            continue
        for path in paths:
            later.setdefault(path, index)
    if not later and blind is None:
        return None
    try:
        words = shlex.split(call.cmd or "")
    except ValueError:
        words = []
    named = {
        posixpath.normpath(w)
        for w in words
        if w and not w.startswith(("-", "/", "..", "<", ">")) and "=" not in w
    }
    read = set(call.read or ())
    for path, index in sorted(later.items()):
        if (
            path in read
            or path in named
            or "." in named
            or any(path.startswith(folder + "/") for folder in named)
        ):
            return f"`{path}`, written by tool call {index}"
    if blind is not None and (named or read or call.read is None):
        return f"what tool call {blind} wrote is not in the record"
    return None


_bind("non-empty", each_file(0, _non_empty))
_bind("format", each_file(1, _format))
_bind("json-schema", each_file(1, _json_schema))
_bind("markdown-sections", each_file(0, _markdown_sections))
_bind("changed", _changed)
_bind("ran", _ran)


# -- the script contract --------------------------------------------------------------------------


_SHOWN_SCRIPT_ERRORS = 3  # each message is ~200 characters; MESSAGE_LIMIT bounds them all


def _workflow_script(contract: Contract, context: ContractContext) -> ContractVerdict:
    """The file, read like any other, judged by `script_validation` (QuickJS in the sandbox,
    never natively): a failure is the model's fix prompt, a pass carries the extracted config
    (sealed with the verdict and kept in telemetry's `detail`)."""
    from groundskeeper.sandbox import SandboxError
    from groundskeeper.sandbox.script_validation import validate_script

    (path,) = contract.args
    text = context.read_text(path)
    try:
        verdict = validate_script(text)
    except SandboxError as exc:  # nobody could judge it: not valid
        raise ContractFailure("C012", f"Script validation failed: cannot run it: {exc}") from None
    errors = [issue.to_json() for issue in verdict.errors]
    warnings = [issue.to_json() for issue in verdict.warnings]
    if not verdict.ok:
        failed = {"errors": errors, "warnings": warnings}
        shown = "; ".join(issue.message for issue in verdict.errors[:_SHOWN_SCRIPT_ERRORS])
        rest = verdict.errors[_SHOWN_SCRIPT_ERRORS:]
        if rest:  # whole messages, within MESSAGE_LIMIT, rather than one cut off mid-word
            shown += f"; and {len(rest)} more ({', '.join(i.code for i in rest)})"
        raise ContractFailure("C012", f"Script validation failed: {shown}", failed)
    noted = f" ({len(warnings)} warning{'s' if len(warnings) != 1 else ''})" if warnings else ""
    held = {"config": verdict.config, "warnings": warnings}
    return ContractVerdict(contract, None, f"`{path}` is a valid workflow script{noted}", held)


CODES["C012"] = "the workflow script fails script validation in the zero-tool sandbox"
_bind("workflow-script", each_file(0, _workflow_script))


def _pytest(contract: Contract, context: ContractContext) -> str:
    """The project's test suite, run in the sandbox, judged against its red-first record."""
    from groundskeeper.acceptance.suite import SuiteRefused, judge_suite, run_suite

    path, minimum = suite_args(contract.args)
    if context.workdir is None:
        raise ContractFailure("C090", "no workdir to run the suite in")
    baseline = context.baselines.get(contract.text)
    from groundskeeper.sandbox import read_set

    # what every run of the suite read (`inputs_changed`); None: it cannot be told
    read: list[str] | None = []
    try:
        freed = _freed_tests(context.workdir, context.added, baseline)
        if context.new_tests and baseline is not None:  # made, never one there before
            made_now = _freed_tests(context.workdir, context.new_tests, baseline)
            freed += tuple(f for f in made_now if f not in _files_of(baseline) and f not in freed)
        with read_set.recording(context.workdir) as reads:
            record = run_suite(context.workdir, path, protect=context.protect)
        read = _more(read, reads.read_files())
        moved: frozenset[str] = frozenset()
        if context.removed and baseline is not None:
            moved = _removed(baseline, context.workdir, context.removed, record.collected)
        if context.renamed and baseline is not None:
            moved |= _renamed(baseline, record.collected, context.renamed)
        made = _new_cases(baseline, record.collected, freed)
        if freed and baseline is not None:
            added = tuple(f for f in freed if f not in _files_of(baseline))
            # new tests in a file the worker was entitled to write are the asked-for work
            baseline = replace(baseline, broken_files=baseline.broken_files + freed)
            moved |= _moved(baseline, record.collected, added)
            if added:
                # the red-first tests must pass without the added files (which, imported
                # first, could patch the code under test); then every test, theirs too
                with read_set.recording(context.workdir) as reads:
                    alone = run_suite(context.workdir, path, protect=context.protect, ignore=added)
                read = _more(read, reads.read_files())
                judge_suite(alone, baseline, 0, context.hidden, moved, context.left_to, made)
        passed = judge_suite(
            record, baseline, minimum, context.hidden, moved, context.left_to, made
        )
    except SuiteRefused as refused:
        message = refused.message
        if refused.output and context.hidden:
            message += (
                f" ({WITHHELD})"  # the suite read hidden inputs; what it printed may show them
            )
        elif refused.output:
            message += f"\n{refused.output}"
        raise ContractFailure(refused.code, message, refused.detail) from None
    held = context.inputs_changed
    changed = held(None if read is None else tuple(dict.fromkeys(read))) if held else []
    if changed:
        raise ContractFailure("C029", "; ".join(changed), {"changed": changed})
    return passed


def _moved(baseline: Baseline, collected: Iterable[str], added: tuple[str, ...]) -> frozenset[str]:
    """The red-first test ids whose test now runs, by the same name, from a file the worker
    was entitled to add (a test module renamed as asked: "Rename tests/test_util.py to
    tests/test_utils.py"): not gone, moved (adversary-17 F16). A test removed outright is
    still gone."""
    now = {i.split("::", 1)[1] for i in collected if "::" in i and i.split("::", 1)[0] in added}
    return frozenset(
        i for i in baseline.collected if i not in collected and i.split("::", 1)[-1] in now
    )


def _renamed(
    baseline: Baseline, collected: Iterable[str], renamed: tuple[tuple[str, str, str], ...]
) -> frozenset[str]:
    """The red-first test ids that run now by the new name a task's text asks for, in the
    same file (adversary-19 F19: "Rename the test test_add in tests/test_calc.py to
    test_add_positive"; a parametrized test keeps its parameters): renamed as asked, not
    gone. A test renamed otherwise, or removed, is still gone."""
    now = set(collected)
    found: set[str] = set()
    for test in baseline.collected:
        if test in now or "::" not in test:
            continue
        file, rest = test.split("::", 1)
        parts = rest.split("::")
        last, bracket, params = parts[-1].partition("[")
        names = [*parts[:-1], last]
        for where, old, new in renamed:
            if where and where != file:
                continue
            for at, name in enumerate(names):
                if name != old:
                    continue
                moved = [*names[:at], new, *names[at + 1 :]]
                if "::".join([file, *moved]) + bracket + params in now:
                    found.add(test)
    return frozenset(found)


def _removed(
    baseline: Baseline, workdir: Path, removed: tuple[str, ...], collected: Iterable[str]
) -> frozenset[str]:
    """The red-first test ids a task's text asks to remove that are gone now: those of the
    files it names that no longer exist (adversary-17 F16), and each test it names as
    `FILE::NAME` (`::NAME`: from any file) that no longer runs — the function, or the class
    with its methods, a parametrized one with every case (adversary-20 F7). Removed as
    asked, not missed. Another test removed is still gone."""
    gone = {f for f in removed if "::" not in f and not (workdir / f).exists()}
    tests = [tuple(f.split("::", 1)) for f in removed if "::" in f]
    now = set(collected)
    found: set[str] = set()
    for test in baseline.collected:
        file, _, rest = test.partition("::")
        if file in gone:
            found.add(test)
            continue
        if test in now or not rest:
            continue
        names = rest.partition("[")[0].split("::")
        if any(where in ("", file) and name in names for where, name in tests):
            found.add(test)
    return frozenset(found)


def _new_cases(
    baseline: Baseline | None, collected: Iterable[str], freed: tuple[str, ...]
) -> frozenset[str]:
    """The ids that are new cases of a parametrized test the red-first run collected
    (`tests/test_calc.py::test_add[0-4-4]` beside `…::test_add[1-2-3]`), when a worker was
    entitled to change a file under the suite's paths that is not a test module — the
    cases' data ("Add the case (0, 4, 4) to CASES in tests/expected_values.py", a JSON file
    of cases; adversary-20 F8): the asked work, not new tests (C022). They run and are
    judged as any test; with no such file freed, a new case is new."""
    if baseline is None or all(named_as_test(f) for f in freed):
        return frozenset()
    families = {i.partition("[")[0] for i in baseline.collected if "[" in i}
    before = set(baseline.collected)
    return frozenset(
        i for i in collected if i not in before and "[" in i and i.partition("[")[0] in families
    )


def _more(read: list[str] | None, more: tuple[str, ...] | None) -> list[str] | None:
    return None if read is None or more is None else read + list(more)


CODES["C029"] = (
    "`pytest`: a file the suite read that was there before the work (the tests' data, a helper"
    " module) was changed by a worker not entitled to it"
)


def _freed_tests(
    workdir: Path, patterns: tuple[str, ...], baseline: Baseline | None
) -> tuple[str, ...]:
    """The files `patterns` (the names a worker was entitled to write under a contract's test
    paths) cover now."""
    if not patterns or baseline is None:
        return ()
    from groundskeeper.acceptance.protect import matched_files

    return tuple(matched_files(workdir, patterns))


def _files_of(baseline: Baseline) -> set[str]:
    """The files of the red-first suite: those its tests were collected from, and those whose
    collection failed then."""
    return {i.split("::", 1)[0] for i in baseline.collected} | set(baseline.broken_files)


_bind("pytest", _pytest)
