"""Evidence checked against the record: the judgement of the `evidence` a worker's
`claim_done` carries against the task's `:evidence:` fields (read by `plan.properties`) —
missing fields, mistyped ones, and `output-of` quotes the record does not show a command
printing.

Rule for `output-of:PATTERN` (so evidence cannot be self-made): the quoted text must appear in
what one `sh` call of this attempt printed (stdout or stderr, read back from the output store
by the hash the ledger sealed), where that call's whole line is a single command whose text
matches PATTERN (a glob) and which exited 0, and the quote is not part of the command's own
text. `echo`/`printf` of the quote, a quote from a command that failed, and a quote printed
by some other command all fail with `false evidence: …`. It does not judge contracts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from groundskeeper.acceptance.attempt_record import AttemptRecord, chain_commands
from groundskeeper.plan.properties import OUTPUT_OF, EvidenceField, command_matches

__all__ = ["CODES", "EvidenceVerdict", "judge_evidence"]

CODES: dict[str, str] = {
    "E001": "a declared evidence field is missing",
    "E002": "an evidence field has the wrong type",
    "E003": "false evidence: the record does not show a command printing the quoted output",
}


@dataclass(frozen=True, slots=True)
class EvidenceVerdict:
    field: EvidenceField
    code: str | None  # None: the field holds
    message: str

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def reason(self) -> str:
        """As a task's reason: `false evidence: <field> …`, `missing evidence: <field> …`."""
        lead = {"E001": "missing evidence", "E002": "wrong evidence", "E003": "false evidence"}
        return f"{lead.get(self.code or '', 'evidence')}: {self.field.name}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field.name,
            "type": self.field.type,
            "pattern": self.field.pattern,
            "ok": self.ok,
            "code": self.code,
            "message": self.message,
        }


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "bool": (bool,),
    "int": (int,),
    "str": (str,),
    "list": (list,),
    "object": (dict,),
    OUTPUT_OF: (str,),
}


def _type_name(value: object) -> str:
    names = {bool: "bool", int: "int", float: "number", str: "str", list: "list", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def judge_evidence(
    fields: Iterable[EvidenceField], evidence: Mapping[str, Any] | None, record: AttemptRecord
) -> list[EvidenceVerdict]:
    """Each declared field's verdict; `evidence` None is a bare final text (no evidence)."""
    verdicts: list[EvidenceVerdict] = []
    for declared in fields:
        if evidence is None or declared.name not in evidence:
            how = (
                "the claim was a bare final message; claim with claim_done {summary, evidence}"
                if evidence is None
                else "the claim's evidence has no such field"
            )
            verdicts.append(EvidenceVerdict(declared, "E001", how))
            continue
        value = evidence[declared.name]
        wanted = _PYTHON_TYPES[declared.type]
        is_bool = isinstance(value, bool)
        if not isinstance(value, wanted) or (declared.type == "int" and is_bool):
            shown = "str (the quoted output)" if declared.type == OUTPUT_OF else declared.type
            message = f"must be {shown}, not {_type_name(value)}"
            verdicts.append(EvidenceVerdict(declared, "E002", message))
            continue
        if declared.type == OUTPUT_OF:
            assert declared.pattern is not None and isinstance(value, str)
            verdicts.append(_quoted(declared, value, record))
            continue
        verdicts.append(EvidenceVerdict(declared, None, f"a {declared.type}"))
    return verdicts


def _short(cmd: str) -> str:
    return cmd if len(cmd) <= 120 else cmd[:120] + "…"


def _quoted(declared: EvidenceField, quote: str, record: AttemptRecord) -> EvidenceVerdict:
    pattern = declared.pattern or ""
    shown = quote if len(quote) <= 80 else quote[:80] + "…"
    if not quote.strip():
        return EvidenceVerdict(declared, "E002", "must quote some output, not an empty string")
    seen: list[str] = []
    ran: list[str] = []
    for call in record.sh_calls():
        if call.cmd is None:
            continue
        status = "was stopped" if call.exit_status is None else f"exited {call.exit_status}"
        ran.append(f"`{_short(call.cmd)}` ({status})")
        commands = chain_commands(call.cmd)
        if commands is None or len(commands) != 1 or not command_matches(pattern, commands[0]):
            continue
        printed = [record.text(call.stdout_sha256), record.text(call.stderr_sha256)]
        if all(p is None for p in printed):
            seen.append(f"`{_short(call.cmd)}` (its output is not in the record)")
            continue
        if not any(p is not None and quote in p for p in printed):
            seen.append(f"`{_short(call.cmd)}` ({status}) did not print it")
            continue
        if quote in call.cmd:
            seen.append(f"`{_short(call.cmd)}` has the quote in its own text: that is not evidence")
            continue
        if call.exit_status != 0:
            seen.append(f"`{_short(call.cmd)}` printed it but {status}")
            continue
        return EvidenceVerdict(
            declared, None, f"printed by `{_short(call.cmd)}` (tool call {call.index})"
        )
    if seen:
        found = "; ".join(seen[:3]) + (f"; and {len(seen) - 3} more" if len(seen) > 3 else "")
        message = f"the record contradicts {shown!r}: {found}"
    else:
        shows = "; ".join(ran[-3:]) if ran else "no command at all"
        message = (
            f"no command matching `{pattern}`, run on its own line, printed {shown!r} in this"
            f" attempt; the record shows {shows}"
        )
    return EvidenceVerdict(declared, "E003", message)
