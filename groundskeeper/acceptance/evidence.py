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
from types import MappingProxyType
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
    fields: Iterable[EvidenceField],
    evidence: Mapping[str, Any] | None,
    record: AttemptRecord,
    wrote: Mapping[str, str | None] | None = MappingProxyType({}),
) -> list[EvidenceVerdict]:
    """Each declared field's verdict; `evidence` None is a bare final text (no evidence).
    `wrote`: the text of every file the attempt created or changed by any tool (None for one
    that could not be read; `wrote` None: what the attempt wrote could not be told)."""
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
            verdicts.append(_self_made(declared, value, wrote) or _quoted(declared, value, record))
            continue
        verdicts.append(EvidenceVerdict(declared, None, f"a {declared.type}"))
    return verdicts


def _short(cmd: str) -> str:
    return cmd if len(cmd) <= 120 else cmd[:120] + "…"


def _self_made(
    declared: EvidenceField, quote: str, wrote: Mapping[str, str | None] | None
) -> EvidenceVerdict | None:
    """A quote found in what the worker wrote in this attempt (by any tool) is not evidence:
    a command reading it back prints the worker's own words."""
    if not quote.strip():
        return None  # E002, said by `_quoted`
    if wrote is None:
        why = "what this attempt wrote could not be told (too many files), so no quote can hold"
        return EvidenceVerdict(declared, "E003", why)
    for path, text in sorted(wrote.items()):
        if text is None or quote in text:
            how = "cannot be read to tell" if text is None else "holds the quote"
            message = (
                f"`{path}`, which this attempt wrote, {how}: a command printing it back prints"
                " the worker's own words, not evidence"
            )
            return EvidenceVerdict(declared, "E003", message)
    return None


def _quoted(declared: EvidenceField, quote: str, record: AttemptRecord) -> EvidenceVerdict:
    """The last `sh` call of the attempt whose one command matches the pattern decides: it
    must have exited 0 and printed the quote, and not have it in its own text."""
    pattern = declared.pattern or ""
    shown = quote if len(quote) <= 80 else quote[:80] + "…"
    if not quote.strip():
        return EvidenceVerdict(declared, "E002", "must quote some output, not an empty string")
    seen: list[str] = []
    ran: list[str] = []
    for call in reversed(list(record.sh_calls())):
        if call.cmd is None:
            continue
        status = "was stopped" if call.exit_status is None else f"exited {call.exit_status}"
        ran.append(f"`{_short(call.cmd)}` ({status})")
        commands = chain_commands(call.cmd)
        if commands is None or len(commands) != 1 or not command_matches(pattern, commands[0]):
            continue
        matched = sum(
            1
            for other in record.sh_calls()
            if other.cmd is not None
            and (found := chain_commands(other.cmd)) is not None
            and len(found) == 1
            and command_matches(pattern, found[0])
        )
        printed = [record.text(call.stdout_sha256), record.text(call.stderr_sha256)]
        if all(p is None for p in printed):
            seen.append(f"`{_short(call.cmd)}` (its output is not in the record)")
            continue
        if not any(p is not None and quote in p for p in printed):
            seen.append(f"`{_short(call.cmd)}` ({status}) did not print it")
        elif _in_own_text(quote, call.cmd):
            seen.append(f"`{_short(call.cmd)}` has the quote in its own text: that is not evidence")
        elif call.exit_status != 0:
            seen.append(f"`{_short(call.cmd)}` printed it but {status}")
        else:
            return EvidenceVerdict(
                declared, None, f"printed by `{_short(call.cmd)}` (tool call {call.index})"
            )
        break  # the last run decides: an earlier one's output is stale
    if seen:
        earlier = matched - 1
        more = f" (the last of {matched} runs of the pattern, which decides)" if earlier else ""
        message = f"the record contradicts {shown!r}: {seen[0]}{more}"
    else:
        shows = "; ".join(ran[:3][::-1]) if ran else "no command at all"
        message = (
            f"no command matching `{pattern}`, run on its own line, printed {shown!r} in this"
            f" attempt; the record shows {shows}"
        )
    return EvidenceVerdict(declared, "E003", message)


_GREP = frozenset({"grep", "egrep", "fgrep"})


def _in_own_text(quote: str, cmd: str) -> bool:
    """Whether the command's own text holds the quote. grep's pattern is left out: grep
    prints lines of what it reads, so a line equal to its pattern came from the file (whose
    writer `_self_made` asks about)."""
    import shlex

    try:
        words = shlex.split(cmd)
    except ValueError:
        return quote in cmd
    if words and words[0] in _GREP:
        for i, word in enumerate(words[1:], start=1):
            if word == "-e" and i + 1 < len(words):
                del words[i : i + 2]
                break
            if not word.startswith("-"):
                del words[i]
                break
        return any(quote in word for word in words)
    return quote in cmd
