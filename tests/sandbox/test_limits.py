"""Every limit ends the run with a nonzero status and a message naming it; the host lives on.

The deadline and output limits are tested at their real defaults' mechanism; memory, fuel
and the pipe limit are shrunk through `wasi.Limits` so the floods stay small and quick.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.sandbox import ShellResult, shell, wasi

MiB = 1024 * 1024
# Sorting big.txt takes ~0.17 s on an idle machine, so one sort could finish inside a short
# deadline and flood stdout (the output limit winning the race); six take over 1 s.
SORTS_PAST_ANY_DEADLINE = "cat big.txt" + " | sort" * 6


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    line = "0123456789 abcdefghijklmnopqrstuvwxyz x\n"
    (root / "big.txt").write_text(line * (12 * MiB // len(line)))  # 12 MiB
    (root / "small.txt").write_text("one x\ntwo\n")
    return root


def run_limited(cmdline: str, work: Path, timeout: float = 10.0, **limits: int) -> ShellResult:
    return shell.run_cmdline(
        cmdline,
        workdir=work,
        read_only=False,
        timeout=timeout,
        env=None,
        limits=wasi.Limits(**limits),
    )


def host_still_works(work: Path) -> None:
    result = sandbox.run("cat small.txt | grep -c x", workdir=work)
    assert (result.status, result.stdout, result.fault) == (0, "1\n", None)


def test_runaway_pipeline_ends_near_its_deadline(work: Path) -> None:
    started = time.monotonic()
    result = sandbox.run("seq 1 100000000000 | wc -l", workdir=work, timeout=2.0)
    elapsed = time.monotonic() - started
    assert result.status in (124, 125)
    assert result.fault in ("deadline", "output")  # whichever of the two it meets first
    assert "exceeded" in result.stderr and "seq" in result.stderr
    assert elapsed < 4.0
    host_still_works(work)


def test_deadline_names_itself(work: Path) -> None:
    started = time.monotonic()
    result = sandbox.run(SORTS_PAST_ANY_DEADLINE, workdir=work, timeout=0.5)
    assert time.monotonic() - started < 2.5
    assert (result.status, result.fault) == (124, "deadline")
    assert result.stderr.endswith("the command line was stopped\n")
    assert "deadline of 0.5s exceeded while running 'sort'" in result.stderr
    host_still_works(work)


def test_output_flood_is_cut_at_the_stream_limit(work: Path) -> None:
    result = sandbox.run("cat big.txt big.txt", workdir=work)
    assert (result.status, result.fault) == (125, "output")
    assert "output limit exceeded by 'cat' (8 MiB for stdout and stderr" in result.stderr
    assert len(result.stdout.encode()) <= wasi.STREAM_LIMIT
    host_still_works(work)


def test_stderr_flood_is_cut_too(work: Path) -> None:
    result = run_limited("cat big.txt >&2", work, stream=1 * MiB)
    assert (result.status, result.fault) == (125, "output")
    assert len(result.stderr.encode()) < 1 * MiB + 200


def test_merged_streams_flood_is_cut_too(work: Path) -> None:
    result = run_limited("cat small.txt big.txt missing.txt 2>&1", work, stream=1 * MiB)
    assert (result.status, result.fault) == (125, "output")
    assert result.stdout.startswith("one x\ntwo\n0123")
    assert len(result.stdout.encode()) <= 1 * MiB
    host_still_works(work)


def test_pipe_and_file_flood_is_cut_at_the_pipe_limit(work: Path) -> None:
    result = run_limited("cat big.txt | grep -c x", work, pipe=1 * MiB)
    assert (result.status, result.fault) == (125, "output")
    result = run_limited("cat big.txt > copy.txt", work, pipe=1 * MiB)
    assert (result.status, result.fault) == (125, "output")
    assert (work / "copy.txt").stat().st_size <= 1 * MiB
    result = run_limited("X=$(cat big.txt)", work, pipe=1 * MiB)
    assert (result.status, result.fault) == (125, "output")


def test_memory_flood_names_the_memory_limit(work: Path) -> None:
    result = run_limited("sort big.txt", work, memory=24 * MiB)
    assert (result.status, result.fault) == (125, "memory")
    assert "memory limit of 24 MiB a command exceeded by 'sort'" in result.stderr
    host_still_works(work)


def test_fuel_bounds_the_work_of_a_line(work: Path) -> None:
    result = run_limited("grep -c x big.txt", work, timeout=1.0, fuel_per_second=10_000_000)
    assert (result.status, result.fault) == (124, "fuel")
    assert "fuel limit exceeded while running 'grep'" in result.stderr
    host_still_works(work)


def test_limits_never_raise_and_later_runs_are_clean(work: Path) -> None:
    for _ in range(3):
        assert sandbox.run("cat big.txt big.txt", workdir=work).fault == "output"
        assert sandbox.run(SORTS_PAST_ANY_DEADLINE, workdir=work, timeout=0.2).fault == "deadline"
    host_still_works(work)


def test_sleep_is_stopped_by_the_deadline(work: Path) -> None:
    # wasmtime cannot interrupt a guest blocked inside poll_oneoff (found by trying: a 3 s
    # clock wait ignored an epoch bump at 0.5 s), so `sleep` must wait in short slices.
    started = time.monotonic()
    result = sandbox.run("sleep 30", workdir=work, timeout=1.0)
    assert (result.status, result.fault) == (124, "deadline")
    assert time.monotonic() - started < 2.5
