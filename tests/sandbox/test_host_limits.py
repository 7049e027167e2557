"""The interpreter's own work is bounded too: host memory, the deadline inside host loops,
`$(…)` nesting depth, and the run's disk quota.

The big floods run in a subprocess each, so that the peak RSS they are judged by is theirs
alone; the smaller cases shrink `wasi.Limits.host_memory` and run in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper import sandbox
from groundskeeper.cli import main
from groundskeeper.sandbox import DiskQuota, ShellResult, ShellSyntaxError, shell, wasi

MiB = 1024 * 1024
REPO = Path(__file__).resolve().parents[2]

MEASURE = """
import json, resource, sys, time
from groundskeeper import sandbox
workdir, cmdline, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
sandbox.run("true", workdir=workdir)  # the engine and module are loaded before measuring
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
result = sandbox.run(cmdline, workdir=workdir, timeout=timeout)
elapsed = time.monotonic() - started
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"status": result.status, "fault": result.fault, "stderr": result.stderr,
                  "elapsed": elapsed, "rss_growth_mib": grown / 1024}))
"""


def measure(workdir: Path, cmdline: str, timeout: float) -> dict[str, object]:
    """One `sandbox.run` in a fresh interpreter: its result, its time, its peak RSS growth."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(workdir), cmdline, str(timeout)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    document: dict[str, object] = json.loads(done.stdout)
    return document


def run_limited(
    cmdline: str, work: Path, timeout: float = 10.0, quota: DiskQuota | None = None, **limits: int
) -> ShellResult:
    return shell.run_cmdline(
        cmdline,
        workdir=work,
        read_only=False,
        timeout=timeout,
        env=None,
        limits=wasi.Limits(**limits),
        quota=quota,
    )


HOST_MEMORY_MESSAGE = "host memory limit of 64 MiB exceeded"

# `B=$B$B$B$B` quadruples B; twenty times over would be 4^20 bytes.
QUADRUPLING = "B=x; " + "B=$B$B$B$B; " * 20 + "echo done"
# 2^19 fields of one letter each, then sixteen copies of them as one command's words.
SPLITTING = 'B="a "; ' + 'B="$B$B"; ' * 18 + "echo " + "$B" * 16 + " | wc -c"


@pytest.mark.parametrize(
    "cmdline",
    ["A=$(seq 1 8000000)", QUADRUPLING, SPLITTING],
    ids=["capture", "quadrupling", "field-splitting"],
)
def test_shell_memory_is_bounded_and_named(tmp_path: Path, cmdline: str) -> None:
    timeout = 10.0
    outcome = measure(tmp_path, cmdline, timeout)
    assert (outcome["status"], outcome["fault"]) == (125, "host-memory"), outcome
    assert HOST_MEMORY_MESSAGE in str(outcome["stderr"])
    assert isinstance(outcome["elapsed"], float) and outcome["elapsed"] < timeout + 1
    assert isinstance(outcome["rss_growth_mib"], float) and outcome["rss_growth_mib"] < 256


@pytest.fixture(scope="module")
def forest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 directories of 200 empty directories each: 40,000 for a glob to walk."""
    root = tmp_path_factory.mktemp("forest")
    for i in range(200):
        top = root / f"d{i}"
        top.mkdir()
        for j in range(200):
            os.mkdir(top / f"e{j}")
    return root


def test_a_glob_over_40k_directories_stops_at_the_deadline(forest: Path) -> None:
    timeout = 1.0
    outcome = measure(forest, "echo */*/*/*/* | wc -c", timeout)
    assert (outcome["status"], outcome["fault"]) == (124, "deadline"), outcome
    assert "deadline of 1s exceeded" in str(outcome["stderr"])
    assert isinstance(outcome["elapsed"], float) and outcome["elapsed"] < timeout + 1
    assert isinstance(outcome["rss_growth_mib"], float) and outcome["rss_growth_mib"] < 256


def test_glob_results_count_against_host_memory(forest: Path) -> None:
    result = run_limited("echo */* | wc -c", forest, host_memory=1 * MiB)
    assert (result.status, result.fault) == (125, "host-memory")
    assert "host memory limit of 1 MiB exceeded" in result.stderr


def test_a_capture_is_cut_at_what_host_memory_has_left(tmp_path: Path) -> None:
    result = run_limited("A=$(seq 1 1000000); echo no", tmp_path, host_memory=2 * MiB)
    assert (result.status, result.fault, result.stdout) == (125, "host-memory", "")
    assert "host memory limit of 2 MiB exceeded" in result.stderr
    assert "'seq'" in result.stderr


def test_nested_captures_count_at_every_level(tmp_path: Path) -> None:
    # 1.2 MiB of output passes through three captures, then is doubled into B
    cmdline = 'A="$(echo "$(echo "$(seq 1 200000)")")"; B="$A$A"; echo ok'
    assert run_limited(cmdline, tmp_path, host_memory=16 * MiB).stdout == "ok\n"
    result = run_limited(cmdline, tmp_path, host_memory=1 * MiB)
    assert (result.status, result.fault) == (125, "host-memory")


def test_ordinary_lines_fit_easily(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x\n" * 1000)
    result = sandbox.run(
        'A=$(seq 1 100000); B="$A$A"; C=$(cat f.txt); echo $A | wc -w; echo * | wc -c',
        workdir=tmp_path,
    )
    assert (result.status, result.stdout, result.fault) == (0, "100000\n6\n", None)


def test_variables_freed_in_a_subshell_are_given_back(tmp_path: Path) -> None:
    # each `$(…)` assigns 1.2 MiB inside its own subshell; ten in a row fit in 4 MiB
    one = 'X=$(A=$(seq 1 200000); echo "$A" | wc -c); '
    result = run_limited(one * 10 + "echo $X", tmp_path, host_memory=4 * MiB)
    assert (result.status, result.stdout, result.fault) == (0, "1288895\n", None)


# ---- nesting depth -------------------------------------------------------------------------

DEEP = "echo " + "$(echo " * 1000 + "x" + ")" * 1000
DEEP_QUOTED = "echo " + '"$(echo ' * 1000 + "x" + ')"' * 1000


@pytest.mark.parametrize("cmdline", [DEEP, DEEP_QUOTED], ids=["plain", "quoted"])
def test_a_thousand_nested_substitutions_are_a_syntax_error(cmdline: str) -> None:
    with pytest.raises(ShellSyntaxError) as caught:
        sandbox.parse(cmdline)
    assert caught.value.message == "'$(…)' nested too deeply (limit 32)"


def test_nesting_up_to_the_limit_parses() -> None:
    script = sandbox.parse("echo " + "$(echo " * 32 + "x" + ")" * 32)
    assert sandbox.command_names(script) == ["echo"] * 33


def test_sh_reports_deep_nesting_as_syntax(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sh", "--workdir", str(tmp_path), "--json", "--", DEEP])
    document = json.loads(result.stdout)
    assert (result.exit_code, document["status"], document["fault"]) == (2, 2, "syntax")
    assert "nested too deeply (limit 32)" in document["stderr"]


def test_lint_reports_deep_nesting_as_a_finding(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(f"* TODO Deep\n  :PROPERTIES:\n  :done-when: {DEEP}\n  :END:\n")
    result = CliRunner().invoke(main, ["lint", str(plan), "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    findings = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [(d["code"], "nested too deeply (limit 32)" in d["message"]) for d in findings] == [
        ("T003", True)
    ]


# ---- the disk quota ------------------------------------------------------------------------


def test_a_redirection_past_the_quota_is_a_named_failure(tmp_path: Path) -> None:
    quota = DiskQuota(1 * MiB)
    result = run_limited("seq 1 1000000 > out.txt; echo no", tmp_path, quota=quota)
    assert (result.status, result.fault, result.stdout) == (125, "disk", "")
    assert "disk quota of 1 MiB exceeded by 'seq'" in result.stderr
    assert (tmp_path / "out.txt").stat().st_size <= 1 * MiB
    assert quota.used <= 1 * MiB


def test_files_a_command_writes_itself_count_too(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("y\n" * 300_000)  # 600,000 bytes, not counted: not a write
    quota = DiskQuota(1 * MiB)
    first = run_limited("cp in.txt a.txt", tmp_path, quota=quota)
    assert (first.status, first.fault, quota.used) == (0, None, 600_000)
    second = run_limited("cp in.txt b.txt", tmp_path, quota=quota)
    assert (second.status, second.fault) == (125, "disk")
    assert "disk quota of 1 MiB exceeded by 'cp'" in second.stderr


def test_the_quota_is_shared_by_every_run_given_it(tmp_path: Path) -> None:
    quota = DiskQuota(1 * MiB)
    for name in ("a", "b", "c"):
        result = sandbox.run(f"seq 1 60000 >> {name}.txt", workdir=tmp_path, quota=quota)
        assert (result.status, result.fault) == (0, None)
    assert quota.used == 3 * 348_894
    result = sandbox.run("seq 1 60000 > d.txt", workdir=tmp_path, quota=quota)
    assert (result.status, result.fault) == (125, "disk")


def test_without_a_quota_nothing_is_counted(tmp_path: Path) -> None:
    result = run_limited("seq 1 1000000 > out.txt", tmp_path)
    assert (result.status, result.fault) == (0, None)
    assert (tmp_path / "out.txt").stat().st_size == 6_888_896


def test_disk_quota_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="positive"):
        DiskQuota(0)
    quota = DiskQuota(10)
    assert quota.take(6) and not quota.take(5) and quota.take(4)
    assert (quota.used, quota.exceeded) == (10, True)
    assert quota.message() == "disk quota of 10 bytes exceeded"
    assert DiskQuota(3 * 1024 * MiB).message() == "disk quota of 3072 MiB exceeded"


def test_elapsed_of_a_quota_failure_is_short(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_limited("seq 1 100000000000 > out.txt", tmp_path, quota=DiskQuota(1 * MiB))
    assert result.fault == "disk"
    assert time.monotonic() - started < 5
