"""Ed25519 keys for the ledger: the user's signing key in $GROUNDSKEEPER_HOME and the set of
public keys a verifier trusts.

Owns key files (creation with mode 0600, permission checks, OpenSSH public keys); it does not
know the ledger format, which lives in `groundskeeper.record.ledger_format`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from groundskeeper.errors import UsageError
from groundskeeper.fastclass import fastclass, field
from groundskeeper.logs import Logger

__all__ = [
    "KeyFileError",
    "LoadedKey",
    "PublicKey",
    "SigningKey",
    "create_signing_key",
    "ensure_signing_key",
    "groundskeeper_home",
    "load_signing_key",
    "read_public_keys",
    "trusted_keys",
]

log = Logger(__name__)

PRIVATE_KEY_FILE = "signing_key.pem"
PUBLIC_KEY_FILE = "signing_key.pub"
TRUSTED_DIR = "trusted"


class KeyFileError(UsageError):
    """A key file that cannot be used: missing, unreadable, malformed or too permissive."""


def groundskeeper_home() -> Path:
    """$GROUNDSKEEPER_HOME, or ~/.config/groundskeeper: the one place user state lives."""
    configured = os.environ.get("GROUNDSKEEPER_HOME")
    if configured:
        return Path(configured)
    return Path.home() / ".config" / "groundskeeper"


@fastclass(frozen=True)
class PublicKey:
    """An Ed25519 public key, known by its id: hex SHA-256 of the 32 raw bytes."""

    raw: bytes
    # Building the cryptography object once per key keeps verification at the raw rate.
    _verifier: Ed25519PublicKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.raw) != 32:
            raise ValueError(f"an Ed25519 public key is 32 bytes, not {len(self.raw)}")
        object.__setattr__(self, "_verifier", Ed25519PublicKey.from_public_bytes(self.raw))

    @property
    def key_id(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def verify(self, signature: bytes, message: bytes) -> bool:
        try:
            self._verifier.verify(signature, message)
        except InvalidSignature:
            return False
        return True

    def to_openssh(self, comment: str = "") -> str:
        from cryptography.hazmat.primitives import serialization

        blob = self._verifier.public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        ).decode("ascii")
        return f"{blob} {comment}".rstrip()

    @classmethod
    def from_openssh(cls, text: str) -> PublicKey:
        """Parse one `ssh-ed25519 AAAA… [comment]` line; ValueError if it is anything else."""
        parts = text.strip().split()
        if len(parts) < 2 or parts[0] != "ssh-ed25519":
            raise ValueError("not an OpenSSH ssh-ed25519 public key line")
        raw = _openssh_ed25519(parts[1])
        if raw is not None:  # the one form groundskeeper writes, read without the ~50
            return cls(raw)  # modules of cryptography's serialization (a hook's start-up)
        from cryptography.hazmat.primitives import serialization

        try:
            loaded = serialization.load_ssh_public_key(f"{parts[0]} {parts[1]}".encode("ascii"))
        except (ValueError, UnsupportedAlgorithm, UnicodeEncodeError) as exc:
            raise ValueError(f"not a valid ssh-ed25519 key: {exc}") from exc
        if not isinstance(loaded, Ed25519PublicKey):
            raise ValueError("not an Ed25519 key")
        return cls(loaded.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


@fastclass(frozen=True)
class SigningKey:
    """An Ed25519 private key. Tests and the vectors build one from a fixed seed."""

    private: Ed25519PrivateKey = field(repr=False)
    public: PublicKey = field(init=False)

    def __post_init__(self) -> None:
        raw = self.private.public_key().public_bytes_raw()
        object.__setattr__(self, "public", PublicKey(raw))

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> SigningKey:
        """The key for a 32-byte RFC 8032 seed (deterministic: for tests and vectors)."""
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    def sign(self, message: bytes) -> bytes:
        return self.private.sign(message)

    def to_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


@fastclass(frozen=True)
class LoadedKey:
    """The user's signing key and where it lives; `created` says this call made it."""

    key: SigningKey
    private_path: Path
    public_path: Path
    created: bool


#: RFC 8410: an unencrypted PKCS#8 Ed25519 private key is this DER prefix and the 32-byte seed.
_PKCS8_ED25519 = bytes.fromhex("302e020100300506032b657004220420")
_PEM_PRIVATE = (b"-----BEGIN PRIVATE KEY-----", b"-----END PRIVATE KEY-----")


def _pkcs8_ed25519_seed(data: bytes) -> bytes | None:
    """The seed of an unencrypted PKCS#8 Ed25519 PEM key in exactly the form `to_pem` writes;
    None for anything else (cryptography's own loader then reads it, or says why not)."""
    lines = data.strip().splitlines()
    if len(lines) < 3 or (lines[0].strip(), lines[-1].strip()) != _PEM_PRIVATE:
        return None
    try:
        der = base64.b64decode(b"".join(line.strip() for line in lines[1:-1]), validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(der) != len(_PKCS8_ED25519) + 32 or not der.startswith(_PKCS8_ED25519):
        return None
    return der[len(_PKCS8_ED25519) :]


def _openssh_ed25519(blob: str) -> bytes | None:
    """The raw key of an OpenSSH `ssh-ed25519` blob (RFC 8709: the length-prefixed name, then
    the length-prefixed 32 bytes); None for anything else."""
    try:
        data = base64.b64decode(blob.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None
    name = b"ssh-ed25519"
    head = len(name).to_bytes(4, "big") + name + (32).to_bytes(4, "big")
    if len(data) != len(head) + 32 or not data.startswith(head):
        return None
    return data[len(head) :]


def _key_paths(home: Path | None) -> tuple[Path, Path]:
    base = home if home is not None else groundskeeper_home()
    return base / PRIVATE_KEY_FILE, base / PUBLIC_KEY_FILE


def _check_private_mode(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise KeyFileError(f"cannot read signing key {path}: {exc.strerror}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(
            f"signing key {path} is accessible by group or others "
            f"(mode {stat.S_IMODE(mode):04o}); a private key must be private. "
            f"Fix it with: chmod 600 {path}"
        )


def load_signing_key(home: Path | None = None) -> LoadedKey:
    """Load the existing signing key; KeyFileError if missing, too permissive or malformed."""
    private_path, public_path = _key_paths(home)
    if not private_path.exists():
        raise KeyFileError(
            f"no signing key at {private_path}; create one with: groundskeeper keygen"
        )
    _check_private_mode(private_path)
    try:
        data = private_path.read_bytes()
        seed = _pkcs8_ed25519_seed(data)
        if seed is not None:  # the form groundskeeper writes (see PublicKey.from_openssh)
            loaded: object = Ed25519PrivateKey.from_private_bytes(seed)
        else:
            from cryptography.hazmat.primitives import serialization

            loaded = serialization.load_pem_private_key(data, password=None)
    except OSError as exc:
        raise KeyFileError(f"cannot read signing key {private_path}: {exc.strerror}") from exc
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise KeyFileError(
            f"signing key {private_path} is not an unencrypted PKCS#8 PEM key ({exc}); "
            "move it away and run: groundskeeper keygen"
        ) from exc
    if not isinstance(loaded, Ed25519PrivateKey):
        raise KeyFileError(f"signing key {private_path} is not an Ed25519 key")
    key = SigningKey(loaded)
    if not public_path.exists():
        try:
            _write_public(public_path, key)
        except OSError as exc:
            raise KeyFileError(
                f"cannot write the public key {public_path}: {exc.strerror or exc}"
            ) from exc
    return LoadedKey(key, private_path, public_path, created=False)


def create_signing_key(home: Path | None = None, *, force: bool = False) -> LoadedKey:
    """Make a new key pair; KeyFileError if one exists (unless `force`)."""
    private_path, public_path = _key_paths(home)
    if private_path.exists() and not force:
        raise KeyFileError(
            f"a signing key already exists at {private_path}; "
            "pass --force to replace it (ledgers it signed then need its .pub in trusted/)"
        )
    home_dir = private_path.parent
    if home_dir.exists() and not home_dir.is_dir():
        raise KeyFileError(
            f"{home_dir} is not a directory; point GROUNDSKEEPER_HOME at a directory"
        )
    key = SigningKey.generate()
    try:
        home_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(private_path, key, replace=force)
        _write_public(public_path, key)
    except OSError as exc:
        raise KeyFileError(
            f"cannot create a signing key in {home_dir}: {exc.strerror or exc}; "
            "point GROUNDSKEEPER_HOME at a directory you can write"
        ) from exc
    log.info("created signing key %s (key id %s)", private_path, key.public.key_id)
    return LoadedKey(key, private_path, public_path, created=True)


def ensure_signing_key(home: Path | None = None) -> LoadedKey:
    """The user's signing key, created on first use (then `created` is True)."""
    private_path, _ = _key_paths(home)
    if private_path.exists():
        return load_signing_key(home)
    try:
        return create_signing_key(home)
    except KeyFileError:
        # Another process created it between our check and our link: use theirs.
        if private_path.exists():
            return load_signing_key(home)
        raise


def _temporary_name(path: Path) -> Path:
    # Unique per call: threads of one process may create the key at the same moment.
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(8).hex()}.tmp")


def _write_private(path: Path, key: SigningKey, *, replace: bool) -> None:
    # The temporary file is created 0600 from the first byte, so the key is never readable
    # by others; link() publishes it without clobbering a key another process just made.
    tmp = _temporary_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, key.to_pem())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError as exc:
                raise KeyFileError(f"a signing key already exists at {path}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def _write_public(path: Path, key: SigningKey) -> None:
    tmp = _temporary_name(path)
    comment = f"groundskeeper-{key.public.key_id[:16]}"
    tmp.write_text(key.public.to_openssh(comment) + "\n", encoding="ascii")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def read_public_keys(path: Path) -> list[PublicKey]:
    """Every key in an OpenSSH public key file (one per line, `#` comments allowed)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KeyFileError(f"cannot read public key file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise KeyFileError(f"public key file {path} is not text") from exc
    keys: list[PublicKey] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            keys.append(PublicKey.from_openssh(line))
        except ValueError as exc:
            raise KeyFileError(
                f"{path}:{number}: {exc}; expected a line like `ssh-ed25519 AAAA… comment` "
                "(the contents of a signing_key.pub)"
            ) from exc
    if not keys:
        raise KeyFileError(f"public key file {path} holds no ssh-ed25519 key")
    return keys


def trusted_keys(home: Path | None = None, extra: Iterable[Path] = ()) -> list[PublicKey]:
    """The keys a verifier trusts: own public key, `trusted/*.pub`, and `extra` files."""
    base = home if home is not None else groundskeeper_home()
    private_path, public_path = _key_paths(base)
    found: list[PublicKey] = []
    if public_path.exists():
        found.extend(read_public_keys(public_path))
    elif private_path.exists():
        found.append(load_signing_key(base).key.public)
    trusted_dir = base / TRUSTED_DIR
    if trusted_dir.is_dir():
        for pub in sorted(trusted_dir.glob("*.pub")):
            found.extend(read_public_keys(pub))
    for path in extra:
        found.extend(read_public_keys(path))
    unique: dict[str, PublicKey] = {}
    for key in found:
        unique.setdefault(key.key_id, key)
    return list(unique.values())
