"""The eval suite's cache starts from the user's own compiled modules (`evals.run._seed`):
copied with the user's cache key, and trusted only as any cache entry is, by its MAC."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from groundskeeper.evals.run import warm_cache
from groundskeeper.sandbox import wasi


@pytest.fixture(scope="module")
def compiled_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user home whose cache holds box.wasm compiled, as after a first `groundskeeper sh`."""
    home = tmp_path_factory.mktemp("user-home")
    env = {**os.environ, "GROUNDSKEEPER_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "groundskeeper", "sh", "--", "true"], env=env,
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    return home


def _user_home(compiled_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    shutil.copytree(compiled_home, home)
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(home))
    return home


def _suite(tmp_path: Path) -> Path:
    """The suite's scratch directory, as the eval backend makes it."""
    (tmp_path / "suite").mkdir()
    return tmp_path / "suite"


def _box_entry() -> str:
    return wasi.entry_name(wasi.BOX_WASM, "box")


def test_a_tampered_entry_in_the_users_cache_is_compiled_again_not_loaded(
    compiled_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _user_home(compiled_home, tmp_path, monkeypatch)
    entry = home / "cache" / _box_entry()
    blob = bytearray(entry.read_bytes())
    blob[-100] ^= 0xFF  # the compiled code altered, its MAC left as it was
    entry.write_bytes(bytes(blob))

    cache = warm_cache(_suite(tmp_path))

    assert cache is not None
    suite_entry = (cache / _box_entry()).read_bytes()
    assert suite_entry != bytes(blob)  # not loaded: compiled and written again
    assert len(suite_entry) > 100_000


def test_a_key_that_is_not_the_entrys_makes_it_compile_again(
    compiled_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _user_home(compiled_home, tmp_path, monkeypatch)
    copied = (home / "cache" / _box_entry()).read_bytes()
    (home / "cache" / wasi.CACHE_KEY_FILE).write_bytes(os.urandom(32))

    cache = warm_cache(_suite(tmp_path))

    assert cache is not None
    assert (cache / _box_entry()).read_bytes() != copied


def test_the_users_compiled_entry_and_key_start_the_suites_cache(
    compiled_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _user_home(compiled_home, tmp_path, monkeypatch)
    mine = home / "cache"

    cache = warm_cache(_suite(tmp_path))

    assert cache is not None
    # the very bytes: the entry's MAC held under the copied key, so nothing was rewritten
    assert (cache / _box_entry()).read_bytes() == (mine / _box_entry()).read_bytes()
    assert (cache / wasi.CACHE_KEY_FILE).read_bytes() == (mine / wasi.CACHE_KEY_FILE).read_bytes()
    assert (cache / wasi.CACHE_KEY_FILE).stat().st_mode & 0o777 == 0o600


def test_without_a_users_cache_the_suite_compiles_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(tmp_path / "empty-home"))

    cache = warm_cache(_suite(tmp_path))

    assert cache is not None
    assert (cache / _box_entry()).stat().st_size > 100_000
    assert not (tmp_path / "empty-home" / "cache").exists()  # the user's home is not touched


def test_a_link_in_the_users_cache_is_not_followed(
    compiled_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _user_home(compiled_home, tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere.key"
    elsewhere.write_bytes(b"k" * 32)
    key = home / "cache" / wasi.CACHE_KEY_FILE
    key.unlink()
    key.symlink_to(elsewhere)

    cache = warm_cache(_suite(tmp_path))

    assert cache is not None
    assert (cache / wasi.CACHE_KEY_FILE).read_bytes() != b"k" * 32
