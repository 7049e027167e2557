"""The ledger's bytes, as ledger/SPEC.md §1–§6 fixes them: canonical JSON, the signed message,
line decoding, the Merkle tree and the checkpoint note, and the two files' names.

Owns no policy: writing lives in `record.ledger`, judging in `record.ledger_verify`; which
ledger a plan or a directory means is the control directory's (`record.control.find_ledger`).
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.fastclass import fastclass
from groundskeeper.record.keys import PublicKey, SigningKey
from groundskeeper.regular_file import NotARegularFileError, read_regular_file

FORMAT_VERSION = 1
PAYLOAD_TYPE = b"application/vnd.groundskeeper.step+json"
GENESIS_PREV = "0" * 64
MAX_LINE_BYTES = 65536
MAX_DEPTH = 64  # arrays and objects open at once; deeper would exhaust a recursive decoder
MAX_SAFE_INT = 2**53 - 1
EXCERPT_CHARS = 200
LEDGER_FILE = "_steps.jsonl"
CHECKPOINT_FILE = "_steps.checkpoint"
ORIGIN_PREFIX = "groundskeeper-ledger/"
STEP_TYPES = (
    "run-start",
    "task-start",
    "tool-call",
    "model-call",
    "claim",
    "check",
    # the final sweep's DONEs judged by their check's read set, unchanged since its verdict
    "inputs-unchanged",
    # DONEs the sweep or a roll-up kept: no worker's tool call and no dock since their verdict
    "untouched",
    "contract",
    "evidence",
    "state",
    "plan-edit",
    "tamper",
    "dock",
    "judge",
    "gate",
    "gate-decision",
    # the writer's own: a torn tail (bytes of an append that never became durable) dropped
    "repair",
    # a goal-driven run's graph steps (`groundskeeper run "GOAL"`)
    "author-call",
    "outline-check",
    "outline-retry",
    "approval",
    "plan-sealed",
    # an eval sweep's suite ledger (`groundskeeper eval`), sealed by its driver alone
    "case-verdict",
    "case-duplicate",
    # an agent's hook (`groundskeeper hook AGENT`): what it answered to a claimed stop
    "hook-decision",
    "run-end",
)
FIELDS = frozenset({"v", "run", "seq", "step", "ts", "prev", "key", "body", "sig"})
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")

_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX_DIGITS = "0123456789abcdef"
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAE_PREFIX = b"DSSEv1 %d %s " % (len(PAYLOAD_TYPE), PAYLOAD_TYPE)
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class LedgerError(GroundskeeperError):
    """A step that cannot be written: a caller's bug (a float in a body, an unknown step
    type), a ledger whose damage an append would hide, or a file that cannot be written
    (the message says which)."""


class LedgerRolledBack(LedgerError):
    """The witness saw lines this ledger no longer holds, or others in their place (SPEC
    §12): appending is refused; the message names the witness entry and the way out."""


class LedgerUnreadable(UsageError):
    """The ledger or its checkpoint cannot be read at all (missing, a directory, no access)."""


# --- files (SPEC §1, §6) ------------------------------------------------------------------


def resolve_ledger_path(path: Path) -> Path:
    """Where to write: a directory means its `_steps.jsonl`; a file is the ledger itself."""
    return path / LEDGER_FILE if path.is_dir() else path


def checkpoint_path(ledger: Path) -> Path:
    return ledger.with_suffix(".checkpoint")


def read_if_present(path: Path, what: str) -> bytes | None:
    """The file's bytes, None if it does not exist; LedgerUnreadable if it cannot be read."""
    try:
        return read_regular_file(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise LedgerUnreadable(f"{what} {path} is a directory, not a file") from exc
    except NotARegularFileError as exc:
        raise LedgerUnreadable(f"{what} {path} is not a regular file ({exc.strerror})") from exc
    except OSError as exc:
        raise LedgerUnreadable(f"cannot read {what} {path}: {exc.strerror}") from exc


def new_temporary(beside: Path) -> tuple[int, str]:
    """A new file for `beside`'s next contents, opened for writing, under an unpredictable
    name in its directory (`tempfile.mkstemp`'s way: created exclusively, not through a
    link, readable by its owner alone, without the ~6 modules tempfile imports)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        name = str(beside.with_name(f"{beside.name}.{os.urandom(8).hex()}"))
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(beside.parent))


# --- canonical JSON (SPEC §2) -------------------------------------------------------------


def check_json_subset(value: Any, where: str) -> None:
    """LedgerError naming the first member of `value` outside the SPEC §2 subset."""
    if _in_subset(value, 0):
        return
    _check_subset(value, where, 0)  # names the member
    raise LedgerError(f"{where}: outside the ledger's JSON subset")  # never reached


def _in_subset(value: Any, depth: int) -> bool:
    """Whether `_check_subset` accepts `value`, without building the path of every member
    it passes (every step's body is checked when staged: ~3x faster than naming them)."""
    kind = type(value)
    if kind is str:
        return _SURROGATE.search(value) is None
    if kind is int:
        return bool(-MAX_SAFE_INT <= value <= MAX_SAFE_INT)
    if value is None or kind is bool:
        return True
    if kind is dict:
        if depth == MAX_DEPTH:
            return False
        for name, item in value.items():
            if type(name) is not str or not (name.isascii() and name.isprintable()):
                return False
            item_kind = type(item)
            if item_kind is str:
                if _SURROGATE.search(item) is not None:
                    return False
            elif item_kind is int:
                if not -MAX_SAFE_INT <= item <= MAX_SAFE_INT:
                    return False
            elif not (item is None or item_kind is bool or _in_subset(item, depth + 1)):
                return False
        return True
    if kind is list:
        if depth == MAX_DEPTH:
            return False
        return all(_in_subset(item, depth + 1) for item in value)
    return False


def _check_subset(value: Any, where: str, depth: int) -> None:
    kind = type(value)
    if value is None or kind is bool or kind is str:
        if kind is str and _SURROGATE.search(value):
            raise LedgerError(f"{where}: a lone surrogate cannot be encoded as UTF-8")
    elif kind is int:
        if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
            raise LedgerError(f"{where}: integer {value} is outside ±(2^53−1)")
    elif kind is list or kind is dict:
        if depth == MAX_DEPTH:
            raise LedgerError(f"{where}: arrays and objects nested deeper than {MAX_DEPTH}")
        if kind is list:
            for index, item in enumerate(value):
                _check_subset(item, f"{where}[{index}]", depth + 1)
            return
        for name, item in value.items():
            if type(name) is not str or not (name.isascii() and name.isprintable()):
                raise LedgerError(f"{where}: member name {name!r} is not printable ASCII")
            _check_subset(item, f"{where}.{name}", depth + 1)
    else:
        raise LedgerError(
            f"{where}: {kind.__name__} is not allowed in the ledger "
            "(only null, bool, int, str, list and dict; no floats)"
        )


#: The member of the object a ledger line holds in place of a text that is not valid UTF-8
#: (SPEC §5, "Names that are not UTF-8"): a file name's bytes, in base64.
NAME_BYTES = "bytes_b64"


def name_bytes(text: str) -> bytes:
    """The bytes a name stands for: as the file system holds it (`surrogateescape`, what
    `os.fsdecode` gives for bytes that are not UTF-8), else each lone surrogate as its own
    three bytes (`surrogatepass`). Never raises."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def sealable(value: Any) -> Any:
    """`value` with every text holding a lone surrogate (a file name that is not UTF-8, a
    model's malformed input) replaced by `{"bytes_b64": BASE64}` of `name_bytes`: the same
    value, losslessly, inside the ledger's subset. Texts that are valid stay as they are."""
    kind = type(value)
    if kind is str:
        if _SURROGATE.search(value) is None:
            return value
        return {NAME_BYTES: base64.b64encode(name_bytes(value)).decode("ascii")}
    if kind is list:
        return [sealable(item) for item in value]
    if kind is dict:
        return {name: sealable(item) for name, item in value.items()}
    return value


def unsealed_name(item: Any) -> str | None:
    """A name as `sealable` sealed it: the text itself, or the `bytes_b64` form decoded back
    (`surrogateescape`, as `os.fsdecode` reads such a name); None for anything else."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and len(item) == 1 and isinstance(item.get(NAME_BYTES), str):
        try:
            raw = base64.b64decode(item[NAME_BYTES], validate=True)
        except ValueError:
            return None
        return raw.decode("utf-8", "surrogateescape")
    return None


def canonical_json(value: Any) -> str:
    """The canonical encoding of SPEC §2; LedgerError for a value outside the subset."""
    check_json_subset(value, "value")
    return encode_canonical(value)


# Built once: json.dumps/loads with options build a new encoder/decoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def encode_canonical(value: Any) -> str:
    """The canonical encoding of a value already known to be inside the subset."""
    return _ENCODER.encode(value)


def signed_message(payload: bytes) -> bytes:
    """What a line's signature covers: the DSSE pre-authentication encoding (SPEC §4), that
    is `pae(PAYLOAD_TYPE, payload)` with the prefix computed once."""
    return b"%s%d %s" % (_PAE_PREFIX, len(payload), payload)


def pae(payload_type: bytes, payload: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding of any payload type (the report's in-toto
    envelopes sign it too)."""
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(payload), payload)


def decode_canonical_base64(text: str, size: int) -> bytes | None:
    """The bytes of canonical base64 `text` if they are `size` long, else None."""
    if not text.isascii():
        return None
    try:
        raw = binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error:
        return None
    # Re-encoding catches spellings a decoder accepts but that are not canonical (non-zero
    # unused bits in the last character).
    if len(raw) != size or binascii.b2a_base64(raw, newline=False) != text.encode("ascii"):
        return None
    return raw


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """At most `limit` characters of `text`, marked with … when cut (SPEC §7)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- lines (SPEC §2, §3) ------------------------------------------------------------------


class _Rejected(ValueError):
    pass


def _reject_constant(text: str) -> NoReturn:
    raise _Rejected(f"{text} is not allowed (no floats)")


def _reject_float(text: str) -> NoReturn:
    raise _Rejected(f"number {text} is not an integer (no floats)")


def _parse_int(text: str) -> int:
    value = int(text)
    if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        raise _Rejected(f"integer {text[:30]} is outside ±(2^53−1)")
    return value


_DECODER = json.JSONDecoder(
    parse_float=_reject_float, parse_constant=_reject_constant, parse_int=_parse_int
)


def decode_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None, str]:
    """(object, code, reason): the object when the line is canonical JSON, else a code."""
    if len(raw) + 1 > MAX_LINE_BYTES:
        return None, "bad-json", f"line is {len(raw) + 1} bytes, over {MAX_LINE_BYTES}"
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _nesting(raw) > MAX_DEPTH:
        # json's decoder (and the re-encoding below) recurse once per level
        return None, "bad-json", f"line nests arrays and objects deeper than {MAX_DEPTH} (SPEC §2)"
    try:
        text = raw.decode("utf-8")
        obj = _DECODER.decode(text)
    except UnicodeDecodeError:
        return None, "bad-json", "line is not UTF-8"
    except _Rejected as exc:
        return None, "bad-json", str(exc)
    except ValueError as exc:
        return None, "bad-json", f"line is not JSON ({exc})"
    if type(obj) is not dict:
        return None, "bad-json", "line is not a JSON object"
    if not text.isascii():
        try:
            check_json_subset(obj, "line")
        except LedgerError as exc:
            return None, "bad-json", str(exc)
    if encode_canonical(obj) != text:
        return obj, "not-canonical", "line is not in canonical form (SPEC §2): re-encoded"
    return obj, None, ""


def _nesting(raw: bytes) -> int:
    """How many arrays and objects are open at most, outside strings (a malformed line may be
    misjudged: the decoder rejects it anyway)."""
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for char in brackets:
        if char == 91 or char == 123:  # `[` or `{`
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def field_problem(obj: dict[str, Any]) -> str | None:
    """Why a decoded line's members break SPEC §3, or None when they all fit."""
    if obj.keys() != FIELDS:
        missing = sorted(FIELDS - obj.keys())
        extra = sorted(obj.keys() - FIELDS)
        return f"members missing {missing}, unexpected {extra}"
    v, run, seq, step, ts = obj["v"], obj["run"], obj["seq"], obj["step"], obj["ts"]
    prev, key, body, sig = obj["prev"], obj["key"], obj["body"], obj["sig"]
    # One pass of cheap checks; the loop below only runs to name what is wrong.
    if (
        type(v) is int
        and v == FORMAT_VERSION
        and type(run) is str
        and RUN_ID.fullmatch(run)
        and type(seq) is int
        and seq >= 1
        and type(step) is str
        and step in STEP_TYPES
        and type(ts) is str
        and _TS.fullmatch(ts)
        and type(prev) is str
        and len(prev) == 64
        and not prev.strip(_HEX_DIGITS)
        and type(key) is str
        and len(key) == 64
        and not key.strip(_HEX_DIGITS)
        and type(body) is dict
        and type(sig) is str
    ):
        return None
    checks: tuple[tuple[str, bool], ...] = (
        ("v", type(v) is int and v == FORMAT_VERSION),
        ("run", type(run) is str and bool(RUN_ID.fullmatch(run))),
        ("seq", type(seq) is int and seq >= 1),
        ("step", type(step) is str and step in STEP_TYPES),
        ("ts", type(ts) is str and bool(_TS.fullmatch(ts))),
        ("prev", type(prev) is str and bool(_HEX64.fullmatch(prev))),
        ("key", type(key) is str and bool(_HEX64.fullmatch(key))),
        ("body", type(body) is dict),
        ("sig", type(sig) is str),
    )
    bad = next(name for name, ok in checks if not ok)
    return f"member {bad} has a wrong type or value: {str(obj[bad])[:60]!r}"


# --- Merkle tree (SPEC §6, RFC 6962 §2.1) ------------------------------------------------


class MerkleTree:
    """RFC 6962 tree hash kept as a compact range: the roots of the perfect subtrees, so
    an append costs O(log n) and the root is available at any time."""

    def __init__(self) -> None:
        self.size = 0
        self._stack: list[bytes] = []

    @property
    def stack(self) -> tuple[bytes, ...]:
        """The roots of the perfect subtrees, largest first (what `from_stack` takes)."""
        return tuple(self._stack)

    @classmethod
    def from_stack(cls, size: int, stack: list[bytes]) -> MerkleTree:
        """The tree of `size` leaves whose compact range is `stack`; ValueError when the
        stack cannot be that of `size` leaves (one 32-byte root per bit set in `size`)."""
        if size < 0 or len(stack) != size.bit_count() or any(len(n) != 32 for n in stack):
            raise ValueError(f"not the compact range of a tree of {size} leaves")
        tree = cls()
        tree.size, tree._stack = size, list(stack)
        return tree

    def append(self, leaf: bytes) -> None:
        node = hashlib.sha256(b"\x00" + leaf).digest()
        n = self.size
        while n & 1:
            node = hashlib.sha256(b"\x01" + self._stack.pop() + node).digest()
            n >>= 1
        self._stack.append(node)
        self.size += 1

    def root(self) -> bytes:
        if not self._stack:
            return hashlib.sha256(b"").digest()
        node = self._stack[-1]
        for left in reversed(self._stack[:-1]):
            node = hashlib.sha256(b"\x01" + left + node).digest()
        return node


# --- checkpoint (SPEC §6, C2SP tlog-checkpoint + signed-note) ----------------------------


def note_key_name(key: PublicKey) -> str:
    return f"groundskeeper-{key.key_id[:16]}"


def note_key_hash(name: str, key: PublicKey) -> bytes:
    """The 4-byte key hash C2SP signed-note recommends for an Ed25519 key."""
    return hashlib.sha256(name.encode("utf-8") + b"\n\x01" + key.raw).digest()[:4]


def ledger_origin(first_line: bytes) -> str:
    """The checkpoint origin naming the ledger whose line 1 (with its LF) is `first_line`."""
    return ORIGIN_PREFIX + hashlib.sha256(first_line).hexdigest()


def format_checkpoint(origin: str, size: int, root: bytes, key: SigningKey) -> bytes:
    text = f"{origin}\n{size}\n{base64.b64encode(root).decode('ascii')}\n".encode()
    name = note_key_name(key.public)
    blob = note_key_hash(name, key.public) + key.sign(text)
    return text + f"\n— {name} {base64.b64encode(blob).decode('ascii')}\n".encode()


@fastclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    text: bytes
    signatures: tuple[tuple[str, bytes], ...]  # (key name, key hash ‖ signature)


_SIG_LINE = re.compile(r"— ([^\s+]+) ([A-Za-z0-9+/=]+)")


def parse_checkpoint(data: bytes) -> Checkpoint | str:
    """The parsed checkpoint, or the reason it is malformed."""
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    text, sep, sigs = decoded.partition("\n\n")
    if not sep or not sigs.endswith("\n") or "\n\n" in sigs:
        return "not a signed note (text, a blank line, signature lines, final newline)"
    lines = text.split("\n")
    if len(lines) != 3:
        return f"expected 3 lines (origin, size, root) before the blank line, found {len(lines)}"
    origin, size_text, root_text = lines
    if not origin.startswith(ORIGIN_PREFIX) or not _HEX64.fullmatch(origin[len(ORIGIN_PREFIX) :]):
        return f"origin {origin[:80]!r} is not groundskeeper-ledger/<64 hex digits>"
    if not re.fullmatch(r"[1-9][0-9]{0,17}", size_text):
        return f"size {size_text[:40]!r} is not a positive decimal number"
    root = decode_canonical_base64(root_text, 32)
    if root is None:
        return "root is not canonical base64 of 32 bytes"
    signatures: list[tuple[str, bytes]] = []
    for line in sigs[:-1].split("\n"):
        match = _SIG_LINE.fullmatch(line)
        blob = decode_canonical_base64(match.group(2), 68) if match else None
        if match is None or blob is None:
            return f"signature line {line[:80]!r} is not `— NAME BASE64(keyhash‖sig)`"
        signatures.append((match.group(1), blob))
    return Checkpoint(origin, int(size_text), root, (text + "\n").encode(), tuple(signatures))


def checkpoint_signer(cp: Checkpoint, keys: Iterable[PublicKey]) -> tuple[str, str]:
    """('ok', key id) | ('bad-signature', name) | ('untrusted', names seen)."""
    candidates = 0
    for name, blob in cp.signatures:
        for key in keys:
            if name == note_key_name(key) and blob[:4] == note_key_hash(name, key):
                candidates += 1
                if key.verify(blob[4:], cp.text):
                    return "ok", key.key_id
    if candidates:
        return "bad-signature", ", ".join(name for name, _ in cp.signatures)
    return "untrusted", ", ".join(name for name, _ in cp.signatures)


_LISTED_PATHS = (b'"changed":["', b'"wrote":["', b'"changed":[{', b'"wrote":[{')


def history_steps(data: bytes) -> list[tuple[str, str, dict[str, Any]]]:
    """(run id, step, body) of every complete line of ledger bytes `data` that says what
    became of a task (not model calls or claims, nor tool calls but those that list a path
    they changed: `Record.made`), in order; a line that does not parse is skipped. Parsing
    only: the lines' signatures and chain are checked elsewhere."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    for raw in data.split(b"\n")[:-1]:
        # canonical JSON escapes every quote inside a string, so these bytes can only be
        # the line's own members: skipped unparsed (most of a ledger's lines)
        if b'"step":"tool-call"' in raw:
            # a listed path is a string, or a name that is not UTF-8 (`{"bytes_b64": …}`)
            if not any(listed in raw for listed in _LISTED_PATHS):
                continue
        elif b'"step":"claim"' in raw or b'"step":"model-call"' in raw:
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):  # not a line this writer made
            continue
        body = obj.get("body") if isinstance(obj, dict) else None
        if isinstance(body, dict) and isinstance(obj.get("step"), str):
            found.append((str(obj.get("run", "")), obj["step"], body))
    return found
