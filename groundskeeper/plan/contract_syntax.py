"""What a task's `:contract:` / `:contract+:` lines say: each contract type's shape (its name,
its arity, its argument rules for lint, the files it protects, the schemas that must exist,
the paths it watches) and the lines read into `Contract`s or `ContractProblem`s.

It owns reading, not judging: `acceptance.contracts` binds a judge to each shape. Syntax of
one line: `[soft] TYPE ARG…`, arguments split as a POSIX shell splits words (quote a heading
with spaces). A leading `soft` makes a failure a warning instead of a failed attempt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from groundskeeper.fastclass import fastclass, field
from groundskeeper.path_patterns import normal_path, pattern_problem
from groundskeeper.plan.org import Heading, Plan

__all__ = [
    "FORMATS",
    "SHAPES",
    "SOFT",
    "Contract",
    "ContractProblem",
    "ContractShape",
    "add_shape",
    "any_args",
    "judged_again",
    "judged_on_files",
    "no_files",
    "parse_contract",
    "protected_by",
    "suite_args",
    "task_contracts",
    "verifying",
    "watched_paths",
    "workdir_paths",
]

SOFT = "soft"
FORMATS = ("json", "yaml", "toml", "csv")


@fastclass(frozen=True, slots=True)
class Contract:
    """One contract line of a task."""

    kind: str
    args: tuple[str, ...]
    soft: bool
    text: str  # the line as written (after the property name)
    line: int | None = None


@fastclass(frozen=True, slots=True)
class ContractProblem:
    """Why a contract line cannot be read: lint's T015/T016, and C011 at runtime."""

    line: int | None
    message: str
    code: str = "T015"


def any_args(args: tuple[str, ...]) -> str | None:
    return None


def no_files(args: tuple[str, ...]) -> tuple[str, ...]:
    return ()


@fastclass(frozen=True, slots=True)
class ContractShape:
    """What one kind of contract line looks like, without its judge.

    `check_args` says what lint says of the arguments beyond their count (None: fine);
    `protects` names the argument files that become protected inputs (a schema);
    `schemas` names the argument files that must exist when the plan is linted;
    `watches` names the path patterns whose files are hashed when the task first starts
    (`changed`);
    `from_record`: it is judged on the record of a worker's attempt (`changed`, `ran`), not
    on the files as they are, so a roll-up or the final sweep cannot judge it again;
    `verifies`: a hard contract of this kind runs the work itself (the project's tests), so
    it is an acceptance check in its own right."""

    name: str
    usage: str
    min_args: int
    max_args: int | None
    check_args: Callable[[tuple[str, ...]], str | None] = field(default=any_args)
    protects: Callable[[tuple[str, ...]], tuple[str, ...]] = field(default=no_files)
    schemas: Callable[[tuple[str, ...]], tuple[str, ...]] = field(default=no_files)
    watches: Callable[[tuple[str, ...]], tuple[str, ...]] = field(default=no_files)
    from_record: bool = False
    verifies: bool = False


#: Every contract type a plan may name; `acceptance.contracts.REGISTRY` holds their judges.
SHAPES: dict[str, ContractShape] = {}


def add_shape(shape: ContractShape) -> ContractShape:
    if shape.name == SOFT or not re.fullmatch(r"[a-z][a-z0-9-]*", shape.name):
        raise ValueError(f"a contract type needs a lower-case name, not {shape.name!r}")
    SHAPES[shape.name] = shape
    return shape


def workdir_paths(args: tuple[str, ...]) -> str | None:
    """An argument rule for lint (`ContractShape.check_args`): every argument is a path
    pattern naming files inside the workdir (`groundskeeper.path_patterns`; a leading `/`
    anchors it there)."""
    for arg in args:
        problem = pattern_problem(arg)
        if problem is not None:
            return f"must be a path inside the workdir: {problem}"
    return None


def _format_rules(args: tuple[str, ...]) -> str | None:
    if args[0] not in FORMATS:
        return f"unknown format `{args[0]}`; the formats are {', '.join(FORMATS)}"
    return None


add_shape(ContractShape("non-empty", "non-empty FILE", 1, 1, workdir_paths))
add_shape(ContractShape("format", "format json|yaml|toml|csv FILE", 2, 2,
                        lambda a: _format_rules(a) or workdir_paths(a[1:])))  # fmt: skip
add_shape(
    ContractShape(
        "json-schema", "json-schema SCHEMA FILE", 2, 2, workdir_paths,
        protects=lambda a: (a[0],), schemas=lambda a: (a[0],),
    )
)  # fmt: skip
add_shape(ContractShape("markdown-sections", 'markdown-sections FILE "Heading"…', 2, None,
                        lambda a: workdir_paths(a[:1])))  # fmt: skip
add_shape(ContractShape("changed", "changed PATH…", 1, None, workdir_paths,
                        watches=lambda a: a, from_record=True))  # fmt: skip
add_shape(ContractShape("ran", "ran PATTERN", 1, 1, from_record=True))
add_shape(ContractShape("workflow-script", "workflow-script FILE", 1, 1, workdir_paths))


def suite_args(args: tuple[str, ...]) -> tuple[str, int]:
    """`pytest PATH [--min N]`'s arguments as (PATH, N), or ValueError saying what is wrong."""
    path, rest = args[0], args[1:]
    if rest and (len(rest) != 2 or rest[0] != "--min" or not rest[1].isdigit()):
        raise ValueError("after PATH only `--min N` may follow, N a whole number")
    return normal_path(path.lstrip("/")) or ".", int(rest[1]) if rest else 0


def _suite_rules(args: tuple[str, ...]) -> str | None:
    try:
        suite_args(args)
    except ValueError as exc:
        return str(exc)
    return workdir_paths(args[:1])


def _suite_files(args: tuple[str, ...]) -> tuple[str, ...]:
    """The suite's own files are protected inputs: a test edited to pass is refused."""
    path = suite_args(args)[0]
    return (path,) if path.endswith(".py") else (f"{path.rstrip('/')}/**/*",)


# judged against the run's red-first baseline and the suite's protected configuration: again
# at a roll-up or the final sweep only when the run holds that baseline (`TaskRun.judged_again`)
add_shape(ContractShape("pytest", "pytest PATH [--min N]", 1, 3, _suite_rules,
                        protects=_suite_files, from_record=True, verifies=True))  # fmt: skip


def parse_contract(text: str, line: int | None = None) -> Contract | ContractProblem:
    import shlex  # imported when a plan has contracts, not by every run

    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        return ContractProblem(line, f"contract `{text.strip()}` cannot be split: {exc}")
    soft = bool(words) and words[0] == SOFT
    if soft:
        words = words[1:]
    if not words:
        return ContractProblem(line, "empty contract: expected `[soft] TYPE ARG…`")
    shape = SHAPES.get(words[0])
    if shape is None:
        known = ", ".join(sorted(SHAPES))
        return ContractProblem(line, f"unknown contract type `{words[0]}`; the types are {known}")
    args = tuple(words[1:])
    if len(args) < shape.min_args or (shape.max_args is not None and len(args) > shape.max_args):
        return ContractProblem(
            line, f"`{words[0]}` takes {_arity(shape)}, not {len(args)}: `{shape.usage}`"
        )
    why = shape.check_args(args)
    if why is not None:
        return ContractProblem(line, f"`{words[0]}`: {why}: `{shape.usage}`")
    return Contract(shape.name, args, soft, text.strip(), line)


def _arity(shape: ContractShape) -> str:
    if shape.max_args == shape.min_args:
        return f"{shape.min_args} argument{'s' if shape.min_args != 1 else ''}"
    if shape.max_args is None:
        return f"at least {shape.min_args} argument{'s' if shape.min_args != 1 else ''}"
    return f"{shape.min_args} to {shape.max_args} arguments"


def task_contracts(plan: Plan, heading: Heading) -> tuple[list[Contract], list[ContractProblem]]:
    """A task's contracts, from its `:contract:` line and every `:contract+:` line after it."""
    contracts: list[Contract] = []
    problems: list[ContractProblem] = []
    for line, text in plan.property_parts(heading, "contract"):
        parsed = parse_contract(text, line)
        (problems if isinstance(parsed, ContractProblem) else contracts).append(parsed)  # type: ignore[arg-type]
    return contracts, problems


def judged_on_files(contract: Contract) -> bool:
    """Whether a contract is judged on the files as they are (again at a roll-up or the final
    sweep), not on the record of a worker's attempt."""
    shape = SHAPES.get(contract.kind)
    return shape is not None and not shape.from_record


def judged_again(contract: Contract) -> bool:
    """Whether a DONE's contract is judged again where its verdict is asserted again (a
    roll-up, the final sweep, `check`): one judged on the files as they are, or a hard
    `pytest` contract, the task's acceptance check in its own right (run again against the
    red-first record its task keeps). Only `changed`, `ran` and `:evidence:`, judged on the
    record of a worker's attempt, are not."""
    return judged_on_files(contract) or bool(verifying((contract,)))


def protected_by(contracts: Iterable[Contract]) -> tuple[str, ...]:
    """The files contracts make protected inputs (their JSON schemas)."""
    return tuple(p for c in contracts if c.kind in SHAPES for p in SHAPES[c.kind].protects(c.args))


def verifying(contracts: Iterable[Contract]) -> tuple[Contract, ...]:
    """The hard contracts that check the work themselves (`pytest`): a task with one is not
    left to the worker's word, whether or not it has a `:done-when:`."""
    return tuple(
        c for c in contracts if not c.soft and c.kind in SHAPES and SHAPES[c.kind].verifies
    )


def watched_paths(contracts: Iterable[Contract]) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys(
            p for c in contracts if c.kind in SHAPES for p in SHAPES[c.kind].watches(c.args)
        )
    )
