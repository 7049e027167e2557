"""The interpreter's own behaviour: statuses, expansion, redirections, builtins, threads, cache."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import wasmtime

from groundskeeper import sandbox
from groundskeeper.errors import GroundskeeperError
from groundskeeper.sandbox import SandboxError, ShellResult, wasi


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\nbeta\n")
    (root / "sub" / "c.txt").write_text("deep\n")
    return root


def sh(cmdline: str, work: Path, **kwargs: object) -> ShellResult:
    return sandbox.run(cmdline, workdir=work, **kwargs)  # type: ignore[arg-type]


def test_syntax_error_is_status_2_naming_the_construct(work: Path) -> None:
    result = sh("printf a; sleep 1 & printf x", work)
    assert (result.status, result.stdout, result.fault) == (2, "", "syntax")
    assert "background jobs '&' are not supported" in result.stderr
    assert "run the command in the foreground" in result.stderr
    assert "line 1, column 19" in result.stderr


def test_unknown_command_is_127_and_the_line_goes_on(work: Path) -> None:
    result = sh("curl http://x; printf 'after %s' $?", work)
    assert result.stderr == "curl: command not found (not in the sandbox)\n"
    assert (result.status, result.stdout, result.fault) == (0, "after 127", None)
    assert sh("./a.txt", work).status == 127


def test_status_and_lists(work: Path) -> None:
    assert sh("false", work).status == 1
    assert sh("! false", work).status == 0
    assert sh("! true", work).status == 1
    assert sh("false || printf x && printf y", work).stdout == "xy"
    assert sh("true && false || printf z", work).stdout == "z"
    assert sh("false; printf '%s' $?; true; printf '%s' $?", work).stdout == "10"
    assert sh("grep -q nothing a.txt | true", work).status == 0  # a pipeline's last stage
    assert sh("true | false", work).status == 1


def test_variables_assignment_and_prefix(work: Path) -> None:
    assert sh('X=hello; printf "%s" "$X ${X}!"', work).stdout == "hello hello!"
    assert sh('X=1 true; printf "[%s]" "$X"', work).stdout == "[]"
    assert sh('printf "[%s]" "$UNSET"', work).stdout == "[]"
    assert sh('printf "[%s]" "$G"', work, env={"G": "given"}).stdout == "[given]"
    assert sh("X=$(false)", work).status == 1


def test_command_substitution_splitting_and_quoting(work: Path) -> None:
    assert sh('printf "<%s>" $(cat a.txt)', work).stdout == "<alpha><beta>"
    assert sh('printf "<%s>" "$(cat a.txt)"', work).stdout == "<alpha\nbeta>"
    assert sh('X="a   b"; printf "<%s>" $X "$X"', work).stdout == "<a><b><a   b>"
    assert sh("printf '<%s>' $(printf '')", work).stdout == "<>"
    assert sh('printf "<%s>" "" x', work).stdout == "<><x>"
    assert sh("printf '%s' $(cd sub); cat c.txt", work).status == 1  # $(…) is a subshell
    assert sh('printf "%s" "$(printf "%s" "$(printf in)")"', work).stdout == "in"


def test_quotes_escapes_and_comments(work: Path) -> None:
    assert sh(r"printf '%s|' 'a b' \$X \"q\" a\ b # trailing", work).stdout == 'a b|$X|"q"|a b|'
    assert sh('printf "%s" "a\\$b\\"c"', work).stdout == 'a$b"c'
    assert sh("printf '%s' \\\n  joined", work).stdout == "joined"


def test_globs_are_sorted_confined_and_literal_when_unmatched(work: Path) -> None:
    (work / "b.txt").write_text("")
    (work / ".hidden.txt").write_text("")
    assert sh("printf '%s ' *.txt", work).stdout == "a.txt b.txt "
    assert sh("printf '%s ' .*.txt", work).stdout == ".hidden.txt "
    assert sh("printf '%s ' */*.txt ?.txt [ab].txt", work).stdout == (
        "sub/c.txt a.txt b.txt a.txt b.txt "
    )
    assert sh("printf '%s ' '*.txt' *.none", work).stdout == "*.txt *.none "
    assert sh("cd sub; printf '%s ' ../*.txt", work).stdout == "../a.txt ../b.txt "


def test_redirections(work: Path) -> None:
    assert sh("cat a.txt > out.txt; cat out.txt", work).stdout == "alpha\nbeta\n"
    assert sh("printf x >> out.txt; printf y >> out.txt", work).status == 0
    assert (work / "out.txt").read_text() == "alpha\nbeta\nxy"
    assert sh("cat out.txt > out.txt", work).status == 0
    assert (work / "out.txt").read_text() == ""  # truncated before cat ran, as in bash
    result = sh("cat missing 2> err.txt", work)
    assert (result.status, result.stderr) == (1, "")
    assert "missing" in (work / "err.txt").read_text()
    assert sh("cat missing 2>&1", work).stdout.startswith("cat: missing:")
    assert sh("cat missing > both.txt 2>&1; cat both.txt", work).stdout.startswith("cat: ")
    assert sh("cat missing 2>&1 > only-out.txt", work).stdout.startswith("cat: ")
    assert sh("cat < a.txt", work).stdout == "alpha\nbeta\n"
    assert sh("cat missing 2>/dev/null", work).stderr == ""
    assert sh("printf x > /dev/null", work).stdout == ""
    result = sh("cat < nowhere.txt; printf '%s' $?", work)
    assert (result.stdout, result.stderr) == ("1", "sh: nowhere.txt: No such file or directory\n")


def test_pipeline_stages_read_the_previous_stdout(work: Path) -> None:
    assert sh("cat a.txt | grep -v alpha | cat", work).stdout == "beta\n"
    assert sh("cat missing 2>&1 | grep -c missing", work).stdout == "1\n"
    assert sh("cd sub | cat a.txt", work).stdout == "alpha\nbeta\n"  # stages are subshells


def test_more_stages_than_a_store_holds(work: Path) -> None:
    # A run's stages share a store of wasi.STAGES_PER_STORE instance slots, recycled when
    # full; a long line must cross that boundary several times, in lists, pipes and $(…).
    count = 3 * wasi.STAGES_PER_STORE + 1
    result = sandbox.run("; ".join(f"echo {n}" for n in range(count)), workdir=work)
    assert (result.status, result.stdout) == (0, "".join(f"{n}\n" for n in range(count)))
    result = sandbox.run("echo x" + " | cat" * count + " | wc -l", workdir=work)
    assert (result.status, result.stdout.strip()) == (0, "1")
    nested = "echo deep"
    for _ in range(wasi.STAGES_PER_STORE + 2):
        nested = f"echo $({nested})"
    assert sandbox.run(nested, workdir=work).stdout == "deep\n"


def test_a_store_is_freed_when_full_or_after_a_stage_that_grew_big() -> None:
    runtime = wasi.lease_runtime()
    try:
        runtime.close_store()  # the one an earlier run may have left it
        watch = wasi.Watch(runtime, deadline=float("inf"))
        store = watch.take_store(wasi.Limits())
        for _ in range(wasi.STAGES_PER_STORE - 1):
            watch.give_back_store(wasi.SMALL_STAGE_MEMORY)
        assert watch.take_store(wasi.Limits()) is store  # small stages share it
        watch.give_back_store(wasi.SMALL_STAGE_MEMORY)
        assert runtime.store is None  # full
        store = watch.take_store(wasi.Limits())
        watch.give_back_store(wasi.SMALL_STAGE_MEMORY + 1)
        assert runtime.store is None  # its memory is freed at once, not kept for the run
    finally:
        wasi.release_runtime(runtime)


def test_an_address_space_limit_turns_the_memory_pool_off_instead_of_aborting(
    work: Path, groundskeeper_home: Path
) -> None:
    # wasmtime's C API aborts the process when its pool cannot be reserved (~65 GiB virtual)
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (40 << 30, resource.RLIM_INFINITY))\n"
        "from groundskeeper import sandbox\n"
        "from groundskeeper.sandbox import wasi\n"
        "result = sandbox.run('echo ok', workdir=sys.argv[1])\n"
        "print(wasi._POOLING, result.status, result.stdout.strip())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(work)],
        capture_output=True,
        text=True,
        env={**os.environ, "GROUNDSKEEPER_HOME": str(groundskeeper_home)},
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "False 0 ok\n"), done.stderr[-2000:]


def test_cd_and_exit_builtins(work: Path) -> None:
    assert sh("cd sub && cat c.txt", work).stdout == "deep\n"
    assert sh("cd sub; cd; cat a.txt", work).stdout == "alpha\nbeta\n"
    result = sh("cd nowhere", work)
    assert (result.status, result.stderr) == (1, "cd: nowhere: No such file or directory\n")
    assert sh("cd a.txt", work).stderr == "cd: a.txt: Not a directory\n"
    result = sh("printf a; exit 3; printf b", work)
    assert (result.status, result.stdout) == (3, "a")
    assert sh("X=$(exit 4); printf $?", work).stdout == "4"
    assert sh("exit x", work).status == 2
    assert sh(": anything at all", work).status == 0


def test_export_passes_variables_to_commands(work: Path) -> None:
    result = sh("export A=1 B; B=2; export", work)
    assert result.stdout == 'declare -x A="1"\ndeclare -x B="2"\n'
    assert sh("export 1x", work).status == 1


def test_unusable_workdir_raises_a_groundskeeper_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError) as caught:
        sandbox.run("true", workdir=tmp_path / "missing")
    assert isinstance(caught.value, GroundskeeperError)
    assert "missing" in str(caught.value)


def test_runs_from_many_threads_at_once(work: Path) -> None:
    for i in range(8):
        (work / f"f{i}.txt").write_text(f"line {i}\n" * (i + 1))
    results: dict[int, ShellResult] = {}

    def worker(i: int) -> None:
        results[i] = sh(f"cat f{i}.txt | grep -c 'line {i}'", work)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {i: (r.status, r.stdout) for i, r in results.items()} == {
        i: (0, f"{i + 1}\n") for i in range(8)
    }


def test_a_deadline_in_one_thread_does_not_stop_another(work: Path) -> None:
    (work / "big.txt").write_text("x" * 1000 + "\n")
    outcome: list[ShellResult] = []
    thread = threading.Thread(target=lambda: outcome.append(sh("cat big.txt", work)))
    slow = sh("cat big.txt | cat", work, timeout=0.0)
    thread.start()
    thread.join()
    assert slow.fault == "deadline"
    assert (outcome[0].status, outcome[0].fault, len(outcome[0].stdout)) == (0, None, 1001)


def sealed(home: Path, payload: bytes) -> bytes:
    """A cache entry for box.wasm's `payload`: its MAC under the cache's key, then itself."""
    identity = wasi._cache_identity(wasi.BOX_WASM.read_bytes())
    key = (home / "cache" / wasi.CACHE_KEY_FILE).read_bytes()
    return wasi._mac(key, identity, payload) + payload


def test_compiled_module_cache_is_verified_and_rewritten(groundskeeper_home: Path) -> None:
    engine = wasmtime.Engine(wasi._new_config())
    wasi._load_module(engine)
    entries = list((groundskeeper_home / "cache").glob("box-*.cwasm"))
    assert len(entries) == 1
    blob = entries[0].read_bytes()
    assert sealed(groundskeeper_home, blob[32:]) == blob
    altered = blob[:32] + b"garbage" + blob[39:]  # same length, altered
    entries[0].write_bytes(altered)
    module = wasi._load_module(engine)
    rewritten = entries[0].read_bytes()
    # recompiled and written back whole (box.wasm itself holds the text "ignore-garbage")
    assert rewritten != altered
    assert sealed(groundskeeper_home, rewritten[32:]) == rewritten
    assert "_start" in [export.name for export in module.exports]


def test_a_rebuilt_box_wasm_never_loads_the_stale_artefact(
    groundskeeper_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = wasmtime.Engine(wasi._new_config())
    wasi._load_module(engine)  # box.wasm's artefact is now cached
    rebuilt = tmp_path / "box.wasm"
    other = '(module (func (export "_start")) (memory (export "m") 1))'
    rebuilt.write_bytes(wasmtime.wat2wasm(other))
    monkeypatch.setattr(wasi, "BOX_WASM", rebuilt)
    module, payload = wasi._load_serialized(engine)
    assert sorted(export.name for export in module.exports) == ["_start", "m"]
    assert len(list((groundskeeper_home / "cache").glob("box-*.cwasm"))) == 2
    # what later engines of the process deserialize is this module, not the first one
    again = wasmtime.Module.deserialize(wasmtime.Engine(wasi._new_config()), payload)
    assert sorted(export.name for export in again.exports) == ["_start", "m"]


def test_a_corrupt_artefact_is_logged_and_recompiled(
    groundskeeper_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = wasmtime.Engine(wasi._new_config())
    wasi._load_module(engine)
    (entry,) = (groundskeeper_home / "cache").glob("box-*.cwasm")
    entry.write_bytes(entry.read_bytes()[:-1])  # torn: one byte short
    with caplog.at_level("WARNING", logger="groundskeeper.sandbox.wasi"):
        module, payload = wasi._load_serialized(engine)
    assert [r.getMessage() for r in caplog.records] == [f"ignoring corrupt compiled module {entry}"]
    assert entry.read_bytes() == sealed(groundskeeper_home, payload)
    assert "_start" in [export.name for export in module.exports]


@pytest.mark.parametrize(
    ("line", "stdout", "status"),
    [
        ('set -o pipefail; false | cat; echo "st=$?"', "st=1\n", 0),
        ('false | cat; echo "st=$?"', "st=0\n", 0),
        ('set -u; echo "${X:-d}"; echo "$X"; echo after', "d\n", 127),
        ("set -e; false; echo after", "", 1),
        ("set -e; if false; then :; fi; false && true; echo after", "after\n", 0),
        ('( set -o pipefail; false | cat; echo "in=$?" ); false | cat; echo "out=$?"',
         "in=1\nout=0\n", 0),
        ("set -euo pipefail; printf '' | grep -c . | cat; echo never", "0\n", 1),
    ],
)  # fmt: skip
def test_set_turns_options_on_as_bash_does(
    tmp_path: Path, line: str, stdout: str, status: int
) -> None:
    result = sandbox.run(line, workdir=tmp_path)
    assert (result.stdout, result.status) == (stdout, status)


@pytest.mark.parametrize("line", ["set +e", "set +o errexit", "set -x", "set -o posix", "set x"])
def test_set_never_turns_an_option_off_and_names_what_it_knows(tmp_path: Path, line: str) -> None:
    result = sandbox.run(line, workdir=tmp_path)
    assert result.status == 2
    assert result.stderr.startswith("set: ")
