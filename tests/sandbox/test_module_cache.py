"""The compiled-module cache loads only what this user's processes compiled from box.wasm.

An entry is authenticated with a key only the user can read, and a cache directory (or key)
that others could change is not used at all, as ssh refuses a too-open ~/.ssh."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import wasmtime

from groundskeeper.sandbox import wasi

REPO = Path(__file__).resolve().parents[2]
# A module that does nothing and returns: loaded as box.wasm, every command "succeeds".
CRAFTED_WAT = '(module (func (export "_start")) (memory (export "memory") 1))'
WARNINGS = "groundskeeper.sandbox.wasi"


@dataclass
class Loads:
    """How box.wasm got into this process's engines: compiled, or deserialized from disk."""

    compiled: int = 0
    deserialized: int = 0


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Loads]:
    seen = Loads()
    compile_module = wasmtime.Module.__init__
    deserialize = wasmtime.Module.deserialize

    def counting_compile(self: wasmtime.Module, engine: wasmtime.Engine, wasm: bytes) -> None:
        seen.compiled += 1
        compile_module(self, engine, wasm)

    def counting_deserialize(
        cls: type[wasmtime.Module], engine: wasmtime.Engine, encoded: bytes
    ) -> wasmtime.Module:
        seen.deserialized += 1
        return deserialize(engine, encoded)

    monkeypatch.setattr(wasmtime.Module, "__init__", counting_compile)
    monkeypatch.setattr(wasmtime.Module, "deserialize", classmethod(counting_deserialize))
    yield seen


def wasi_imports(module: wasmtime.Module) -> set[str]:
    """The import modules: box.wasm's calls WASI, the crafted stub calls nothing."""
    return {item.module for item in module.imports}


def load() -> wasmtime.Module:
    return wasi._load_module(wasmtime.Engine(wasi._new_config()))


def box_entry() -> Path:
    return wasi._cache_path(wasi.BOX_WASM.read_bytes())


def fresh_process_check(home: Path, cmdline: str) -> int:
    """The status of `cmdline` run in a new process (no module already in memory)."""
    code = (
        "import sys\n"
        "from groundskeeper import sandbox\n"
        "print(sandbox.run(sys.argv[1], workdir=sys.argv[2]).status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, cmdline, str(home)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "GROUNDSKEEPER_HOME": str(home)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout)


def crafted_payload() -> bytes:
    engine = wasmtime.Engine(wasi._new_config())
    return bytes(wasmtime.Module(engine, wasmtime.wat2wasm(CRAFTED_WAT)).serialize())


def owned_by_someone_else(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(path, 65534, 65534, follow_symlinks=False)


# ---- the attack ------------------------------------------------------------------------------


def test_a_crafted_module_swapped_into_the_cache_never_runs(groundskeeper_home: Path) -> None:
    assert fresh_process_check(groundskeeper_home, "test -s does-not-exist") == 1
    entry = box_entry()
    assert entry.is_file()  # the real module is cached: the swap replaces a live entry
    payload = crafted_payload()
    crafted = hashlib.sha256(payload).digest() + payload  # checks out as a plain hash
    entry.write_bytes(crafted)
    assert fresh_process_check(groundskeeper_home, "test -s does-not-exist") == 1
    rewritten = entry.read_bytes()
    assert rewritten != crafted  # recompiled from box.wasm and written back
    mtime = entry.stat().st_mtime_ns
    assert fresh_process_check(groundskeeper_home, "test -s does-not-exist") == 1
    assert (entry.read_bytes(), entry.stat().st_mtime_ns) == (rewritten, mtime)  # now trusted


def test_a_crafted_module_planted_before_the_first_run_never_runs(
    groundskeeper_home: Path,
) -> None:
    """No earlier run, so no key: whatever waits at the entry's path is still not loaded."""
    entry = box_entry()
    entry.parent.mkdir(parents=True)
    payload = crafted_payload()
    entry.write_bytes(hashlib.sha256(payload).digest() + payload)
    assert fresh_process_check(groundskeeper_home, "test -s does-not-exist") == 1


def test_an_authentic_entry_of_another_box_wasm_is_not_loaded_for_box_wasm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MAC covers what the entry was compiled from, not only its bytes."""
    other = tmp_path / "box.wasm"
    other.write_bytes(wasmtime.wat2wasm(CRAFTED_WAT))
    with monkeypatch.context() as patch:
        patch.setattr(wasi, "BOX_WASM", other)
        assert sorted(export.name for export in load().exports) == ["_start", "memory"]
        other_entry = box_entry()
    box_entry().write_bytes(other_entry.read_bytes())  # same key, another module
    assert wasi_imports(load()) == {"wasi_snapshot_preview1"}  # box.wasm, not the stub


# ---- entries -------------------------------------------------------------------------------


def test_a_valid_entry_is_loaded_without_compiling(loads: Loads) -> None:
    load()
    assert (loads.compiled, loads.deserialized) == (1, 0)
    entry = box_entry()
    before = (entry.read_bytes(), entry.stat().st_mtime_ns)
    module = load()
    assert (loads.compiled, loads.deserialized) == (1, 1)
    assert (entry.read_bytes(), entry.stat().st_mtime_ns) == before
    assert wasi_imports(module) == {"wasi_snapshot_preview1"}


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda blob: blob[:-1], id="torn"),
        pytest.param(lambda blob: blob[:100] + bytes([blob[100] ^ 1]) + blob[101:], id="bit"),
        pytest.param(lambda blob: bytes([blob[0] ^ 1]) + blob[1:], id="mac"),
        pytest.param(lambda blob: hashlib.sha256(blob[32:]).digest() + blob[32:], id="old-format"),
        pytest.param(lambda blob: b"", id="empty"),
    ],
)
def test_an_altered_entry_is_recompiled_and_rewritten(
    tamper: object, loads: Loads, caplog: pytest.LogCaptureFixture
) -> None:
    load()
    entry = box_entry()
    altered = tamper(entry.read_bytes())  # type: ignore[operator]
    entry.write_bytes(altered)
    with caplog.at_level("WARNING", logger=WARNINGS):
        module = load()
    assert (loads.compiled, loads.deserialized) == (2, 0)
    assert [r.getMessage() for r in caplog.records] == [f"ignoring corrupt compiled module {entry}"]
    assert wasi_imports(module) == {"wasi_snapshot_preview1"}
    assert entry.read_bytes() != altered
    load()  # the rewritten entry is authentic
    assert (loads.compiled, loads.deserialized) == (2, 1)


# ---- the directory and the key ---------------------------------------------------------------


def make_group_writable(cache: Path) -> None:
    cache.chmod(0o770)


def make_world_writable(cache: Path) -> None:
    cache.chmod(0o777)


def make_symlink(cache: Path) -> None:
    real = cache.with_name("real-cache")
    cache.rename(real)
    cache.symlink_to(real)


def make_foreign(cache: Path) -> None:
    owned_by_someone_else(cache)


@pytest.mark.parametrize(
    ("unsafe", "why"),
    [
        (make_group_writable, "it is writable by group or others (mode 0770)"),
        (make_world_writable, "it is writable by group or others (mode 0777)"),
        (make_symlink, "it is a symbolic link"),
        (make_foreign, "it is owned by uid 65534"),
    ],
)
def test_a_cache_directory_others_can_change_is_neither_read_nor_written(
    unsafe: object,
    why: str,
    groundskeeper_home: Path,
    loads: Loads,
    caplog: pytest.LogCaptureFixture,
) -> None:
    load()
    cache = groundskeeper_home / "cache"
    box_entry().unlink()
    unsafe(cache)  # type: ignore[operator]
    with caplog.at_level("WARNING", logger=WARNINGS):
        module = load()
        load()
    assert wasi_imports(module) == {"wasi_snapshot_preview1"}
    assert (loads.compiled, loads.deserialized) == (3, 0)
    assert os.listdir(cache) == [".key"]  # nothing written
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert all(
        m.startswith(f"not using the compiled-module cache {cache}: {why}") for m in messages
    )


def test_an_entry_in_a_world_writable_directory_is_not_read(
    groundskeeper_home: Path, loads: Loads
) -> None:
    load()
    (groundskeeper_home / "cache").chmod(0o777)
    load()
    assert (loads.compiled, loads.deserialized) == (2, 0)


def test_a_new_cache_directory_and_key_are_private(groundskeeper_home: Path) -> None:
    load()
    cache = groundskeeper_home / "cache"
    key = cache / ".key"
    assert stat.S_IMODE(cache.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE(key.lstat().st_mode) == 0o600 & ~current_umask()
    assert stat.S_ISREG(key.lstat().st_mode)
    assert len(key.read_bytes()) == 32
    before = key.read_bytes()
    load()
    assert key.read_bytes() == before  # made once, then read back


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def key_readable_by_group(key: Path) -> None:
    key.chmod(0o640)


def key_readable_by_all(key: Path) -> None:
    key.chmod(0o644)


def key_writable_by_others(key: Path) -> None:
    key.chmod(0o602)


def key_a_symlink(key: Path) -> None:
    real = key.with_name("real-key")
    key.rename(real)
    key.symlink_to(real)


def key_foreign(key: Path) -> None:
    owned_by_someone_else(key)


def key_a_directory(key: Path) -> None:
    key.unlink()
    key.mkdir(mode=0o700)


def key_a_fifo(key: Path) -> None:
    key.unlink()
    os.mkfifo(key, 0o600)


def key_too_short(key: Path) -> None:
    key.write_bytes(key.read_bytes()[:16])


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (key_readable_by_group, "is not private: it is readable or writable by group or others"),
        (key_readable_by_all, "is not private: it is readable or writable by group or others"),
        (key_writable_by_others, "is not private: it is readable or writable by group or others"),
        (key_a_symlink, "is a symbolic link"),
        (key_foreign, "is not private: it is owned by uid 65534"),
        (key_a_directory, "is not a regular file"),
        (key_a_fifo, "is not a regular file"),
        (key_too_short, "is not 32 bytes long"),
    ],
)
def test_a_key_others_could_read_or_change_disables_the_cache(
    spoil: object,
    why: str,
    groundskeeper_home: Path,
    loads: Loads,
    caplog: pytest.LogCaptureFixture,
) -> None:
    load()
    entry = box_entry()
    before = (entry.read_bytes(), entry.stat().st_mtime_ns)
    key = groundskeeper_home / "cache" / ".key"
    spoil(key)  # type: ignore[operator]
    with caplog.at_level("WARNING", logger=WARNINGS):
        module = load()
    assert wasi_imports(module) == {"wasi_snapshot_preview1"}
    assert (loads.compiled, loads.deserialized) == (2, 0)  # the valid entry is not used
    assert (entry.read_bytes(), entry.stat().st_mtime_ns) == before  # nor rewritten
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith(f"not using the compiled-module cache: its key {key} {why}")


# ---- the verified copy: an entry's MAC checked once per boot -------------------------------


@dataclass
class Maps:
    """What the mapped load (a new runtime's) did: files mapped, entries MACed."""

    mapped: list[str]
    macs: int = 0


@pytest.fixture
def maps(monkeypatch: pytest.MonkeyPatch) -> Iterator[Maps]:
    seen = Maps([])
    deserialize_file = wasmtime.Module.deserialize_file
    mac = wasi._mac

    def counting_map(cls: type[wasmtime.Module], engine: wasmtime.Engine, path: str) -> object:
        seen.mapped.append(path)
        return deserialize_file(engine, path)

    def counting_mac(key: bytes, identity: bytes, payload: bytes) -> bytes:
        seen.macs += 1
        return mac(key, identity, payload)

    monkeypatch.setattr(wasmtime.Module, "deserialize_file", classmethod(counting_map))
    monkeypatch.setattr(wasi, "_mac", counting_mac)
    yield seen


def load_mapped() -> wasmtime.Module:
    return wasi._load_serialized(wasmtime.Engine(wasi._new_config()), mapped=True)[0]


def verified(entry: Path) -> tuple[Path, Path]:
    return entry.with_name(entry.name + ".plain"), entry.with_name(entry.name + ".stamp")


def test_the_copy_is_made_only_after_the_mac_held_and_then_mapped_without_one(
    maps: Maps,
) -> None:
    load_mapped()  # compiled: nothing was verified, no copy
    entry = box_entry()
    plain, stamp = verified(entry)
    assert not plain.exists() and not stamp.exists()
    assert (maps.mapped, maps.macs) == ([], 1)
    load_mapped()  # the entry's MAC holds: the copy is made beside it
    assert plain.read_bytes() == entry.read_bytes()[32:]
    assert len(stamp.read_bytes()) == 32
    assert (maps.mapped, maps.macs) == ([], 2)
    module = load_mapped()
    assert maps.macs == 2  # no MAC over the entry again
    assert len(maps.mapped) == 1 and maps.mapped[0].startswith("/proc/self/fd/")
    assert wasi_imports(module) == {"wasi_snapshot_preview1"}
    load()  # the other loaders never take the copy
    assert (len(maps.mapped), maps.macs) == (1, 3)


def tamper_plain_in_place(plain: Path, stamp: Path, entry: Path) -> None:
    data = bytearray(plain.read_bytes())
    data[200] ^= 1
    plain.write_bytes(bytes(data))


def replace_plain_with_same_bytes(plain: Path, stamp: Path, entry: Path) -> None:
    copy = plain.with_name("other")
    copy.write_bytes(plain.read_bytes())
    copy.chmod(0o600)
    copy.rename(plain)


def flip_stamp(plain: Path, stamp: Path, entry: Path) -> None:
    data = stamp.read_bytes()
    stamp.write_bytes(bytes([data[0] ^ 1]) + data[1:])


def touch_entry(plain: Path, stamp: Path, entry: Path) -> None:
    os.chmod(entry, 0o600)  # a change of its inode (the ctime), not of its bytes


def drop_stamp(plain: Path, stamp: Path, entry: Path) -> None:
    stamp.unlink()


def group_writable_plain(plain: Path, stamp: Path, entry: Path) -> None:
    plain.chmod(0o620)


@pytest.mark.parametrize(
    "change",
    [
        tamper_plain_in_place,
        replace_plain_with_same_bytes,
        flip_stamp,
        touch_entry,
        drop_stamp,
        group_writable_plain,
    ],
)
def test_a_copy_not_exactly_as_stamped_is_not_mapped(maps: Maps, change: object) -> None:
    load_mapped()
    load_mapped()
    entry = box_entry()
    plain, stamp = verified(entry)
    change(plain, stamp, entry)  # type: ignore[operator]
    module = load_mapped()
    assert (maps.mapped, maps.macs) == ([], 3)  # the entry was read and MACed again
    assert wasi_imports(module) == {"wasi_snapshot_preview1"}


def test_a_copy_stamped_in_another_boot_is_not_mapped(
    maps: Maps, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    load_mapped()
    load_mapped()
    boot = tmp_path / "boot_id"
    boot.write_text("another boot\n")
    monkeypatch.setattr(wasi, "_BOOT_ID", boot)
    load_mapped()
    assert (maps.mapped, maps.macs) == ([], 3)
    load_mapped()  # stamped again for this boot
    assert (len(maps.mapped), maps.macs) == (1, 3)


def test_without_a_boot_id_nothing_is_copied_or_mapped(
    maps: Maps, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(wasi, "_BOOT_ID", tmp_path / "missing")
    for _ in range(3):
        load_mapped()
    plain, stamp = verified(box_entry())
    assert not plain.exists() and not stamp.exists()
    assert (maps.mapped, maps.macs) == ([], 3)


def test_a_crafted_module_put_in_the_copy_never_runs(groundskeeper_home: Path) -> None:
    for _ in range(2):  # compiled; then verified and copied
        assert fresh_process_check(groundskeeper_home, "test -s does-not-exist") == 1
    plain, _ = verified(box_entry())
    assert plain.is_file()
    plain.write_bytes(crafted_payload())  # would make every command "succeed"
    assert fresh_process_check(groundskeeper_home, "test -s does-not-exist") == 1
