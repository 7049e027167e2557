"""Signing keys in $GROUNDSKEEPER_HOME: created 0600 with no readable window, refused when
others can read them, and the trusted set a verifier uses."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from groundskeeper.record import keys
from groundskeeper.record.keys import (
    KeyFileError,
    PublicKey,
    SigningKey,
    create_signing_key,
    ensure_signing_key,
    load_signing_key,
    read_public_keys,
    trusted_keys,
)

SEED = bytes(range(32))


def test_home_follows_the_environment(
    groundskeeper_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert keys.groundskeeper_home() == groundskeeper_home
    monkeypatch.delenv("GROUNDSKEEPER_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert keys.groundskeeper_home() == Path("/home/someone/.config/groundskeeper")


def test_first_use_creates_a_private_key_0600_even_with_umask_0(groundskeeper_home: Path) -> None:
    old = os.umask(0)
    try:
        loaded = ensure_signing_key()
    finally:
        os.umask(old)
    assert loaded.created is True
    assert loaded.private_path == groundskeeper_home / "signing_key.pem"
    assert stat.S_IMODE(loaded.private_path.stat().st_mode) == 0o600
    assert loaded.private_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    pub = loaded.public_path.read_text()
    assert pub.startswith("ssh-ed25519 ")
    assert read_public_keys(loaded.public_path) == [loaded.key.public]
    assert [p.name for p in groundskeeper_home.iterdir() if p.name.startswith(".")] == []
    again = ensure_signing_key()
    assert again.created is False
    assert again.key.public == loaded.key.public


def test_the_private_file_is_never_readable_by_others(
    groundskeeper_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Watch every file the key writer opens: each must be created 0600 before a byte is written.
    modes: list[int] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        if b"PRIVATE KEY" in data:
            modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    old = os.umask(0)
    try:
        create_signing_key()
    finally:
        os.umask(old)
    assert modes == [0o600]


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_key_others_can_access_is_refused_with_the_fix(
    groundskeeper_home: Path, mode: int
) -> None:
    loaded = create_signing_key()
    os.chmod(loaded.private_path, mode)
    with pytest.raises(KeyFileError) as caught:
        load_signing_key()
    assert f"chmod 600 {loaded.private_path}" in str(caught.value)
    assert f"{mode:04o}" in str(caught.value)
    with pytest.raises(KeyFileError):
        ensure_signing_key()


def test_a_garbled_key_is_refused(groundskeeper_home: Path) -> None:
    path = groundskeeper_home / "signing_key.pem"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"not a key\n")
    os.close(fd)
    with pytest.raises(KeyFileError, match="not an unencrypted PKCS#8 PEM key"):
        load_signing_key()


def test_missing_key_names_the_command(groundskeeper_home: Path) -> None:
    with pytest.raises(KeyFileError, match="groundskeeper keygen"):
        load_signing_key()


def test_create_refuses_to_overwrite_unless_forced(groundskeeper_home: Path) -> None:
    first = create_signing_key()
    with pytest.raises(KeyFileError, match="already exists"):
        create_signing_key()
    assert load_signing_key().key.public == first.key.public
    second = create_signing_key(force=True)
    assert second.key.public != first.key.public
    assert stat.S_IMODE(second.private_path.stat().st_mode) == 0o600
    assert load_signing_key().key.public == second.key.public


def test_concurrent_first_use_agrees_on_one_key(groundskeeper_home: Path) -> None:
    results: list[PublicKey] = []
    threads = [
        threading.Thread(target=lambda: results.append(ensure_signing_key().key.public))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6
    assert len(set(results)) == 1


def test_public_key_ids_and_openssh_round_trip() -> None:
    key = SigningKey.from_seed(SEED)
    line = key.public.to_openssh("me@host")
    assert line.startswith("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5")
    assert line.endswith(" me@host")
    assert PublicKey.from_openssh(line) == key.public
    assert key.public.key_id == hashlib.sha256(key.public.raw).hexdigest()
    assert key.public.verify(key.sign(b"m"), b"m") is True
    assert key.public.verify(key.sign(b"m"), b"n") is False


@pytest.mark.parametrize(
    "line",
    [
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ me",
        "ssh-ed25519 not-base64",
        "ssh-ed25519",
        "-----BEGIN PUBLIC KEY-----",
    ],
)
def test_other_public_keys_are_refused(line: str) -> None:
    with pytest.raises(ValueError):
        PublicKey.from_openssh(line)


def test_trusted_keys_are_own_trusted_dir_and_extra(
    groundskeeper_home: Path, tmp_path: Path
) -> None:
    assert trusted_keys() == []
    own = create_signing_key().key.public
    colleague = SigningKey.from_seed(SEED).public
    visitor = SigningKey.from_seed(bytes(32)).public
    (groundskeeper_home / "trusted").mkdir()
    (groundskeeper_home / "trusted" / "colleague.pub").write_text(
        "# the build machine\n" + colleague.to_openssh("ci") + "\n"
    )
    (groundskeeper_home / "trusted" / "notes.txt").write_text("ignored: not a .pub\n")
    extra = tmp_path / "visitor.pub"
    extra.write_text(visitor.to_openssh() + "\n")
    assert trusted_keys() == [own, colleague]
    assert trusted_keys(extra=[extra]) == [own, colleague, visitor]


def test_a_malformed_trusted_file_names_file_and_line(groundskeeper_home: Path) -> None:
    (groundskeeper_home / "trusted").mkdir()
    bad = groundskeeper_home / "trusted" / "bad.pub"
    bad.write_text(SigningKey.from_seed(SEED).public.to_openssh() + "\nssh-dss AAAA x\n")
    with pytest.raises(KeyFileError, match=f"{bad}:2:"):
        trusted_keys()


def test_a_home_that_is_a_file_is_a_key_file_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("not a directory\n")
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(home))
    with pytest.raises(KeyFileError, match="home-is-a-file is not a directory"):
        ensure_signing_key()


def test_an_unwritable_home_is_a_key_file_error_naming_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Below a regular file, mkdir fails even for root (tests may run as root: no chmod tricks).
    (tmp_path / "blocker").write_text("")
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(tmp_path / "blocker" / "home"))
    with pytest.raises(KeyFileError, match=r"cannot create a signing key in .*blocker/home: "):
        create_signing_key()


@given(seed=st.binary(min_size=32, max_size=32))
def test_the_quick_readers_agree_with_cryptographys_loaders(seed: bytes) -> None:
    """The hook reads its key without cryptography's serialization module (start-up time):
    in the forms groundskeeper writes, the quick readers give exactly what the full loaders
    give; anything else they leave to the full loaders."""
    from cryptography.hazmat.primitives import serialization

    key = SigningKey.from_seed(seed)
    pem = key.to_pem()
    loaded = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(loaded, Ed25519PrivateKey)
    assert keys._pkcs8_ed25519_seed(pem) == loaded.private_bytes_raw() == seed
    blob = key.public.to_openssh("c").split()[1]
    assert keys._openssh_ed25519(blob) == key.public.raw
    assert PublicKey.from_openssh(key.public.to_openssh()) == key.public
    for other in (pem.replace(b"PRIVATE KEY", b"EC PRIVATE KEY"), pem[:-40] + pem[-20:], b""):
        assert keys._pkcs8_ed25519_seed(other) is None
    assert keys._openssh_ed25519(blob[:-4]) is None
