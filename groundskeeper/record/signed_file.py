"""A small JSON file beside a ledger that only the plan's key can vouch for (the record index
`_steps.index`, the verified prefix `_steps.verified`): written whole with its ed25519
signature over a domain-separated canonical form, and read back only when that signature is
the given key's. Both are caches: one that cannot be written or trusted is only a slower
next call, so every failure here is logged and answered with None, never raised."""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from groundskeeper.errors import GroundskeeperError
from groundskeeper.logs import Logger
from groundskeeper.record.keys import PublicKey, SigningKey
from groundskeeper.record.ledger_format import read_if_present

log = Logger(__name__)


def canonical(value: dict[str, Any]) -> bytes:
    """The bytes a signature covers: sorted keys, no spaces, ASCII."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _joined(members: dict[str, str]) -> bytes:
    """`canonical` of the object whose members (each `"key":value`, canonical) are these."""
    return ("{" + ",".join(members[k] for k in sorted(members)) + "}").encode()


def write_signed(
    target: Path, payload: dict[str, Any], key: SigningKey, context: bytes, what: str
) -> None:
    """`payload` and its signature under `context`, written to `target` by a rename from a
    temporary file of this process (a reader sees the old file or the new, never half).
    Each member of `payload` is encoded once: the signed text and the file's are the same
    members, the file's with `sig` among them (a record index is hundreds of KiB)."""
    if not all(isinstance(k, str) for k in payload) or "sig" in payload:
        raise TypeError("a signed file's payload has string keys, none of them `sig`")
    members = {k: canonical({k: v})[1:-1].decode() for k, v in payload.items()}
    signature = base64.b64encode(key.sign(context + _joined(members))).decode()
    members["sig"] = canonical({"sig": signature})[1:-1].decode()
    temporary = target.with_name(f".{target.name}-{os.getpid()}.tmp")
    try:
        temporary.write_bytes(_joined(members) + b"\n")
        os.replace(temporary, target)
    except OSError as error:
        log.info("cannot write the %s %s: %s", what, target, error)
        with contextlib.suppress(OSError):
            temporary.unlink()


def read_signed(
    path: Path, key: SigningKey, context: bytes, what: str, whose: str
) -> dict[str, Any] | None:
    """The payload at `path` when `key` signed it under `context` (its fields unchecked:
    the caller's to judge), else None: absent, unreadable, not JSON, or another key's
    (`whose` names the key in that warning)."""
    parsed = _parsed(path, what)
    if parsed is None:
        return None
    signed, signature = parsed
    if not key.public.verify(signature, context + canonical(signed)):
        log.warning("ignoring the %s %s: not signed by %s", what, path, whose)
        return None
    return signed


def read_signed_by(
    path: Path, keys: Iterable[PublicKey], context: bytes, what: str
) -> dict[str, Any] | None:
    """`read_signed` for a file whose `key` member names which of `keys` signed it: its
    payload when that key's signature under `context` holds, else None."""
    parsed = _parsed(path, what)
    if parsed is None:
        return None
    signed, signature = parsed
    named = signed.get("key")
    signer = next((k for k in keys if k.key_id == named), None)
    if signer is None or not signer.verify(signature, context + canonical(signed)):
        log.warning("ignoring the %s %s: not signed by a trusted key", what, path)
        return None
    return signed


def _parsed(path: Path, what: str) -> tuple[dict[str, Any], bytes] | None:
    """The signed file's payload (its `sig` member taken out) and signature, else None:
    absent, unreadable or not a JSON object with a base64 `sig` (each named in a warning)."""
    try:
        raw = read_if_present(path, what)
    except GroundskeeperError as error:
        log.warning("ignoring the %s: %s", what, error)
        return None
    if raw is None:
        return None
    try:
        signed = json.loads(raw)
        signature = base64.b64decode(signed.pop("sig"), validate=True)
    except (ValueError, TypeError, KeyError, AttributeError):
        log.warning("ignoring the %s %s: it does not parse", what, path)
        return None
    return dict(signed), signature
