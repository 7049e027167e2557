"""The verified prefix, `_steps.verified` beside the ledger: how far a reader that verifies the
whole ledger on every call (an agent's hook) got last time, so that it checks only the lines
appended since.

It is a cache, never a source, like the record index (`record_index`). It is used only when
it is signed by the reader's signing key, names the very keys trusted now, and the ledger's
first B bytes still hash to the SHA-256 it was made from: then those bytes are the ones that
verified, line by line, and the verifier carries on from its state after them
(`ledger_verify.verify_after`) to the same findings a verification of every line gives.
Otherwise (missing, torn, altered, another key's or version's, a ledger cut or rewritten
under it, a checkpoint behind it) every line is verified again. It is written only for a
ledger that verified (a stale checkpoint aside).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from groundskeeper import __version__
from groundskeeper.logs import Logger
from groundskeeper.record.keys import PublicKey, SigningKey
from groundskeeper.record.ledger_format import LedgerUnreadable, read_if_present
from groundskeeper.record.ledger_verify import LineState, Report, verify_after
from groundskeeper.record.signed_file import read_signed, write_signed

__all__ = ["PREFIX_FILE", "verify_with_prefix"]

log = Logger(__name__)

PREFIX_FILE = "_steps.verified"
VERSION = 1
# what the signature covers starts with this: it can be taken for no other signed text
_CONTEXT = b"groundskeeper verified prefix v1\n"


def prefix_path(ledger: Path) -> Path:
    return ledger.with_name(PREFIX_FILE)


def verify_with_prefix(
    ledger: Path, trusted: Iterable[PublicKey], key: SigningKey | None
) -> tuple[Report, bytes, LineState]:
    """The report `verify_ledger(ledger, trusted)` gives, the ledger's bytes it is about
    (read once: what the caller parses is what was verified) and the verifier's state after
    their complete lines (its Merkle tree: `ledger.known_lines`). With the signing `key`,
    only the lines after the verified prefix are checked, and the prefix is moved to the end
    when the ledger verifies. LedgerUnreadable when there is no ledger or it cannot be read."""
    keys = sorted(trusted, key=lambda k: k.key_id)
    data = read_if_present(ledger, "ledger")
    if data is None:
        raise LedgerUnreadable(f"no ledger at {ledger}")
    keyset = _keyset(keys)
    state = _read_prefix(ledger, data, key, keyset) if key is not None else None
    report: Report | None = None
    if state is not None:
        try:
            report, after = verify_after(ledger, data, keys, state)
        except LedgerUnreadable:
            report = None
    if report is None:
        report, after = verify_after(ledger, data, keys, LineState())
    if (
        key is not None
        and after.tree.size
        and all(f.code == "checkpoint-stale" for f in report.findings)
    ):
        _write_prefix(ledger, data, after, key, keyset)
    return report, data, after


def _keyset(keys: list[PublicKey]) -> str:
    return hashlib.sha256(",".join(k.key_id for k in keys).encode()).hexdigest()


def _read_prefix(ledger: Path, data: bytes, key: SigningKey, keyset: str) -> LineState | None:
    """The state after the verified prefix when it may be used on `data`, else None."""
    path = prefix_path(ledger)
    signed = read_signed(path, key, _CONTEXT, "verified prefix", "this key")
    if signed is None:
        return None
    size, sha = signed.get("bytes"), signed.get("sha256")
    if (
        signed.get("v") != VERSION
        or signed.get("groundskeeper") != __version__
        or signed.get("keys") != keyset
        or type(size) is not int
        or not 0 < size <= len(data)
        or data[size - 1 : size] != b"\n"
        or not isinstance(sha, str)
    ):
        log.info("ignoring the verified prefix %s: another ledger's, keys' or version's", path)
        return None
    if hashlib.sha256(data[:size]).hexdigest() != sha:
        log.info("the verified prefix %s does not match the ledger: verify it all", path)
        return None
    try:
        state = LineState.from_json(signed["state"])
    except (KeyError, TypeError, ValueError) as error:
        log.warning("ignoring the verified prefix %s: %r", path, error)
        return None
    if state.tree.size != data[:size].count(b"\n"):
        log.warning("ignoring the verified prefix %s: its lines are not its bytes'", path)
        return None
    return state


def _write_prefix(
    ledger: Path, data: bytes, state: LineState, key: SigningKey, keyset: str
) -> None:
    """Best effort: a prefix that cannot be written is only a slower next call."""
    size = data.rfind(b"\n") + 1
    payload = {
        "v": VERSION,
        "groundskeeper": __version__,
        "keys": keyset,
        "bytes": size,
        "sha256": hashlib.sha256(data[:size]).hexdigest(),
        "state": state.to_json(),
    }
    write_signed(prefix_path(ledger), payload, key, _CONTEXT, "verified prefix")
