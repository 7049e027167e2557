"""CPython runs in a fuel-free companion engine of the run's (fuel metering cost 20-30 % of
every python3 run), bounded by the run's deadline through epoch interruption and by a backstop
timer of its own per stage; box.wasm's commands keep their fuel. Failure paths first: the
deadline, a stop of the run, the backstop with the watchdog broken, fuel that runs out around
a python3 stage; then the host-side plumbing across engines (pipes, $(…), store reuse) and the
compiled module's identity (a module compiled with fuel never loads into the fuel-free engine).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import wasmtime

from groundskeeper import sandbox
from groundskeeper.sandbox import ShellResult, cpython, cpython_warm, shell, wasi
from groundskeeper.sandbox.confine import GUEST_ROOT
from groundskeeper.sandbox.shell_streams import Capture
from tests.sandbox.python_workdirs import py

LOOP = "python3 -c 'while True: pass'; echo after"
# a tiny module whose _start returns (wat): enough to tell engines' compiled code apart
TINY = '(module (memory (export "memory") 1) (func (export "_start")))'


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def sh(work: Path, cmdline: str, timeout: float = 30.0, **limits: int) -> ShellResult:
    return shell.run_cmdline(
        cmdline, workdir=work, read_only=False, timeout=timeout, env=None,
        limits=wasi.Limits(**limits),
    )  # fmt: skip


def loaded(work: Path) -> None:
    """The module is loaded in this thread's pooled runtime (its first load is not timed)."""
    assert sh(work, "python3 -c pass").status == 0


# ---- the deadline, a stop, the backstop --------------------------------------------------


def test_an_endless_python3_loop_ends_as_deadline_within_its_deadline_and_slack(
    work: Path,
) -> None:
    loaded(work)
    started = time.monotonic()
    result = sh(work, LOOP, timeout=1.0)
    took = time.monotonic() - started
    assert (result.status, result.fault, result.stdout) == (124, "deadline", "")
    assert result.stderr == (
        "sh: deadline of 1s exceeded while running 'python3': the command line was stopped\n"
    )
    assert 1.0 <= took < 1.0 + 0.75, took  # the watchdog, not the backstop (1 s later)


def test_a_stop_of_the_run_ends_a_running_python3_at_once(work: Path) -> None:
    loaded(work)
    done: list[ShellResult] = []
    runner = threading.Thread(target=lambda: done.append(sh(work, LOOP, timeout=30.0)))
    runner.start()
    time.sleep(1.0)  # python3 is in its loop (it starts in ~0.1 s)
    stopped = time.monotonic()
    try:
        wasi.interrupt_runs()
        runner.join(10)
    finally:
        wasi.allow_runs()
    took = time.monotonic() - stopped
    assert not runner.is_alive()
    (result,) = done
    assert (result.status, result.fault, result.stdout) == (130, "interrupted", "")
    assert took < 0.5, took


def test_with_the_watchdog_broken_the_backstop_still_ends_an_endless_loop(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded(work)
    monkeypatch.setattr(wasi, "BACKSTOP_GRACE", 0.5)
    # the normal deadline path disabled: neither the watchdog nor the shell can stop the run
    monkeypatch.setattr(wasi.Watch, "stop", lambda self, fault: None)
    done: list[ShellResult] = []
    runner = threading.Thread(target=lambda: done.append(sh(work, LOOP, timeout=1.0)))
    started = time.monotonic()
    runner.start()
    runner.join(1.0 + 0.5 + 3.0)
    took = time.monotonic() - started
    if runner.is_alive():  # the backstop failed: end the guest, then fail
        monkeypatch.undo()
        try:
            wasi.interrupt_runs()
            runner.join(10)
        finally:
            wasi.allow_runs()
        pytest.fail("the backstop did not end python3 past its deadline")
    (result,) = done
    assert (result.status, result.fault, result.stdout) == (124, "deadline", "")
    assert "deadline of 1s exceeded while running 'python3'" in result.stderr
    assert 1.5 <= took < 1.5 + 1.0, took


def test_the_backstop_of_a_stage_that_ended_never_stops_a_later_one(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded(work)
    monkeypatch.setattr(wasi, "BACKSTOP_GRACE", 0.2)
    # its backstop would fire 1.2 s from now, into the next run's python3 (same engine)
    assert sh(work, "python3 -c pass", timeout=1.0).status == 0
    code = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 2: pass\nprint('done')"
    result = sh(work, f"python3 -c {py(code)}", timeout=30.0)
    assert (result.status, result.fault, result.stdout) == (0, None, "done\n")


# ---- fuel: box.wasm keeps it, python3 neither spends it nor reads its absence as a limit --


def test_python3_runs_when_the_lines_fuel_is_spent_and_box_commands_still_meet_it(
    work: Path,
) -> None:
    # 30 units for the line are not enough for one box command: it still runs out at once
    line = "python3 -c 'print(sum(range(10**6)))'; seq 3"
    result = sh(work, line, fuel_per_second=1)
    assert (result.stdout, result.status, result.fault) == ("499999500000\n", 124, "fuel")
    assert result.stderr == "sh: fuel limit exceeded while running 'seq' (too much computation)\n"
    # python3 spends none of the line's fuel: what is left is the box command's
    assert sh(work, "seq 3", fuel_per_second=1).fault == "fuel"
    spent = sh(work, "python3 -c 'print(sum(range(10**6)))'; seq 2", fuel_per_second=10_000)
    assert (spent.status, spent.stdout, spent.fault) == (0, "499999500000\n1\n2\n", None)


def test_a_cpython_stage_reports_no_fuel_used(work: Path) -> None:
    runtime = wasi.lease_runtime()
    watch = wasi.start_watch(runtime, 30.0)
    out, err = Capture(1 << 20), Capture(1 << 20)
    root_fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    try:
        spec = wasi.StageSpec(
            argv=["python3", "-c", "print(sum(range(10**5)))"],
            env=[("GK_CWD", GUEST_ROOT)],
            stdin=b"",
            stdout=out,
            stderr=err,
            root_fd=root_fd,
            read_only=True,
        )
        outcome = cpython.run_cpython(spec, watch, 5, wasi.Limits())
    finally:
        os.close(root_fd)
        wasi.end_watch(watch)
        wasi.release_runtime(runtime)
    assert (outcome.status, outcome.fault, outcome.fuel_used) == (0, None, 0)
    assert bytes(out.data) == b"4999950000\n"
    assert runtime.unmetered is not None and runtime.unmetered.metered is False
    assert runtime.metered is True


# ---- the plumbing between engines is the host's, as before --------------------------------


@pytest.mark.parametrize(
    ("line", "out"),
    [
        ('python3 -c \'print("a"); print("b")\' | grep b', "b\n"),
        ("seq 3 | python3 -c 'import sys; print(sum(map(int, sys.stdin)))'", "6\n"),
        ("echo $(python3 -c 'print(5)') $(echo 6)", "5 6\n"),
        (
            "python3 -c 'print(7)' > n.txt && cat n.txt | python3 -c 'print(int(input()) * 2)'",
            "14\n",
        ),
        (
            "printf 'x\\ny\\n' | python3 -c 'import sys; print(len(sys.stdin.read()))' | wc -c",
            "2\n",
        ),
        ('for i in 1 2; do python3 -c "print($i * 3)"; echo box; done', "3\nbox\n6\nbox\n"),
    ],
)
def test_pipes_redirections_and_substitutions_cross_engines(
    work: Path, line: str, out: str
) -> None:
    result = sh(work, line)
    assert (result.status, result.stdout, result.stderr, result.fault) == (0, out, "", None)


def test_a_check_run_twice_in_one_process_reuses_its_engines_and_stays_right(
    work: Path,
) -> None:
    line = "python3 -c 'print(2 + 2)' | grep -x 4 && echo ok"
    first = sandbox.run(line, workdir=work, timeout=30, sentinel="SENT")
    runtime = wasi.lease_runtime()  # the one the runs used (single thread: last in, first out)
    wasi.release_runtime(runtime)
    companion = runtime.unmetered
    second = sandbox.run(line, workdir=work, timeout=30, sentinel="SENT")
    for result in (first, second):
        assert (result.status, result.stdout, result.fault) == (0, "4\nok\nSENT\n", None)
    assert companion is not None and runtime.unmetered is companion
    # a run stopped at its deadline leaves both engines usable for the next
    assert sh(work, LOOP, timeout=1.0).fault == "deadline"
    third = sandbox.run(line, workdir=work, timeout=30, sentinel="SENT")
    assert (third.status, third.stdout) == (0, "4\nok\nSENT\n")


# ---- the compiled module's identity -------------------------------------------------------


def test_the_compiled_cpython_is_named_for_the_fuel_free_engine_and_the_transform() -> None:
    transformed = f"{cpython.WASM_SHA256} {cpython_warm.TRANSFORM}"
    fuel_free = wasi.compiled_identity(transformed, metered=False).hex()[:32]
    with_fuel = wasi.compiled_identity(transformed).hex()[:32]
    untransformed = wasi.compiled_identity(cpython.WASM_SHA256, metered=False).hex()[:32]
    assert len({fuel_free, with_fuel, untransformed}) == 3
    assert cpython.compiled_path().name == f"python-{fuel_free}.cwasm"


def test_code_compiled_for_one_engine_never_loads_into_the_other() -> None:
    for compiled_with, loaded_into in ((True, False), (False, True)):
        module = wasmtime.Module(wasi.new_engine(metered=compiled_with), TINY)
        with pytest.raises(wasmtime.WasmtimeError):
            wasmtime.Module.deserialize(wasi.new_engine(metered=loaded_into), module.serialize())


def test_a_module_compiled_with_fuel_at_cpythons_path_is_refused_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "share"
    monkeypatch.setattr(cpython, "runtime_dir", lambda: where)
    where.mkdir(mode=0o755)
    metered = wasmtime.Module(wasi.new_engine(), TINY)
    cpython.compiled_path().write_bytes(metered.serialize())
    cpython.compiled_path().chmod(0o644)
    with pytest.raises(cpython.NotSetUp, match="is not a usable compiled module"):
        cpython._load(wasi.new_engine(metered=False))


def test_setup_compiles_for_the_fuel_free_engine_and_removes_the_old_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundskeeper.sandbox import cpython_setup

    where = tmp_path / "share"
    monkeypatch.setattr(cpython, "runtime_dir", lambda: where)
    monkeypatch.setattr(cpython_setup, "verified_module", lambda: wasmtime.wat2wasm(TINY))
    monkeypatch.setattr(cpython_warm, "transform", lambda data: data)  # it needs the build
    where.mkdir(mode=0o755)
    old = where / f"python-{wasi.compiled_identity(cpython.WASM_SHA256).hex()[:32]}.cwasm"
    old.write_bytes(wasmtime.Module(wasi.new_engine(), TINY).serialize())
    assert cpython_setup.compile_module() > 0  # an old set-up is compiled again
    assert sorted(p.name for p in where.glob("*.cwasm")) == [cpython.compiled_path().name]
    module, _ = cpython._load(wasi.new_engine(metered=False))
    assert [e.name for e in module.exports] == ["memory", "_start"]
    assert cpython_setup.compile_module() == 0.0  # done: not compiled again


def test_a_deadline_past_what_a_timer_can_wait_still_gets_its_backstop(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashed: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    started: list[float] = []
    real = threading.Timer.__init__

    def timer(self: threading.Timer, interval: float, *args: object, **kw: object) -> None:
        started.append(interval)
        real(self, interval, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(threading.Timer, "__init__", timer)
    result = sh(work, "python3 -c 'print(1)'", timeout=1e12)  # ~31,700 years
    assert (result.status, result.stdout, result.fault) == (0, "1\n", None)
    assert started == [threading.TIMEOUT_MAX] and crashed == []
