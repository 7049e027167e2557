"""Human approval per task (`:gate: approval`): what a gate is bound to and what an answer is.

It owns the artifacts a gate hashes and the shape of an answer (the `:gate:` properties are
read by `plan.properties` and judged by lint's G0xx). It does not own waiting or asking: the
runner opens a gate when a gated task's check passes and applies answers it is given; the
supervisor graph asks a person through one LangGraph interrupt per waiting task.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from groundskeeper.acceptance.protect import input_sha256, named_files

__all__ = [
    "DECISIONS",
    "MAX_LISTED_FILES",
    "GateAnswer",
    "GateOpened",
    "artifacts_sha256",
    "gate_paths",
    "hash_files",
    "new_gate_id",
    "workdir_files",
]

Decision = Literal["yes", "no", "revise"]
DECISIONS: tuple[Decision, ...] = ("yes", "no", "revise")
#: a gate with no files named and none written hashes the whole workdir, up to this many files
MAX_LISTED_FILES = 2000


def new_gate_id() -> str:
    return secrets.token_hex(8)


def gate_paths(workdir: Path, patterns: Iterable[str]) -> tuple[str, ...] | None:
    """The files `:gate-files:` names now, each pattern read by the one matcher (a plain path
    as spelled, a directory or a glob as every file it covers: `protect.named_files`); None
    (bind the whole workdir) when they cover more files than can be listed."""
    found: dict[str, None] = {}
    try:
        for pattern in patterns:
            found.update(dict.fromkeys(named_files(workdir, pattern)))
    except ValueError:
        return None
    return tuple(found) if len(found) <= MAX_LISTED_FILES else None


def hash_files(workdir: Path, files: Iterable[str]) -> list[dict[str, str | None]]:
    """Each file's SHA-256 now (None: absent, not a regular file, or a link leaving the
    workdir), sorted by path."""
    return [{"path": f, "sha256": input_sha256(workdir, f)} for f in sorted(set(files))]


def artifacts_sha256(check_sha256: str | None, files: list[dict[str, str | None]]) -> str:
    """The one hash an answer is bound to: the check and every artifact's content."""
    doc = {"check_sha256": check_sha256, "files": files}
    text = json.dumps(doc, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def workdir_files(workdir: Path, skip: Iterable[Path]) -> list[str]:
    """Every regular file under the workdir (relative, POSIX), the plan's file and control
    directory left out: what a gate hashes when nothing names its artifacts."""
    skipped = {os.path.realpath(p) for p in skip}
    found: list[str] = []
    for root, dirs, names in os.walk(workdir):
        dirs[:] = sorted(d for d in dirs if os.path.realpath(Path(root) / d) not in skipped)
        for name in sorted(names):
            path = Path(root) / name
            if os.path.realpath(path) in skipped or not path.is_file() or path.is_symlink():
                continue
            found.append(PurePosixPath(path.relative_to(workdir)).as_posix())
            if len(found) >= MAX_LISTED_FILES:
                return found
    return found


@dataclass(frozen=True, slots=True)
class GateOpened:
    """A gate that waits: sealed as a `gate` step; the interrupt's value in a goal run."""

    task_id: str
    title: str
    gate_id: str
    check_sha256: str | None
    files: tuple[tuple[str, str | None], ...]
    artifacts_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "title": self.title,
            "gate_id": self.gate_id,
            "check_sha256": self.check_sha256,
            "files": [{"path": p, "sha256": h} for p, h in self.files],
            "artifacts_sha256": self.artifacts_sha256,
        }


@dataclass(frozen=True, slots=True)
class GateAnswer:
    """A person's answer to one gate, bound to the gate (its id, the interrupt's id and the
    artifacts' hash). `refused` is set when the supervisor refused it before the runner saw
    it (e.g. it answered another gate): then it is never applied."""

    task_id: str
    gate_id: str
    interrupt_id: str
    artifacts_sha256: str
    decision: str
    note: str = ""
    by: str = ""
    refused: str | None = None

    @classmethod
    def from_json(cls, task_id: str, data: Mapping[str, Any]) -> GateAnswer:
        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        refused = data.get("refused")
        return cls(
            task_id,
            text("gate_id"),
            text("interrupt_id"),
            text("artifacts_sha256"),
            text("decision"),
            text("note"),
            text("by"),
            refused if isinstance(refused, str) else None,
        )
