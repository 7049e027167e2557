"""QuickJS under the sandbox's WASI layer (`groundskeeper.sandbox.quickjs`): a program sees no
file, no environment and no stdin, and every limit ends it with the limit named."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.sandbox import quickjs

STD = 'import * as std from "qjs:std";\nimport * as os from "qjs:os";\n'


def test_a_program_runs_and_prints() -> None:
    run = quickjs.run_program("print(6 * 7, typeof std, typeof os, typeof require)")
    assert (run.completed, run.fault) == (True, None)
    assert run.stdout == "42 undefined undefined undefined\n"


def test_no_file_is_reachable_by_any_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "secret.txt").write_text("secret\n")
    monkeypatch.chdir(tmp_path)
    program = STD + (
        "const tries = ['secret.txt', './secret.txt', '/secret.txt', '/etc/passwd', '/', '.',"
        f" {str(tmp_path / 'secret.txt')!r}];\n"
        "for (const path of tries) {\n"
        "  const file = std.open(path, 'r');\n"
        "  const [entries, error] = os.readdir(path);\n"
        "  print(path, file === null ? 'closed' : 'OPEN', error === 0 ? 'LISTED' : 'unlisted');\n"
        "}\n"
        "print(std.open('new.txt', 'w') === null ? 'no write' : 'WROTE');\n"
    )
    run = quickjs.run_program(program, module=True)
    assert run.completed, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 8
    assert all(line.endswith(" closed unlisted") for line in lines[:7]), lines
    assert lines[7] == "no write"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.txt"]


def test_no_environment_and_no_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_SECRET", "x")
    program = STD + "print(JSON.stringify(std.getenviron()), JSON.stringify(std.in.readAsString()))"
    run = quickjs.run_program(program, module=True)
    assert run.stdout == '{} ""\n'


def test_an_endless_loop_is_ended_by_the_deadline() -> None:
    run = quickjs.run_program("for (;;) {}", timeout=0.3)
    assert (run.completed, run.fault) == (False, "deadline")


def test_a_sleep_past_the_deadline_is_ended_by_it() -> None:
    run = quickjs.run_program(STD + "os.sleep(60000); print('woke')", timeout=0.3, module=True)
    assert (run.completed, run.fault, run.stdout) == (False, "deadline", "")
    assert run.duration_ms < 5000


def test_fuel_ends_a_loop_the_deadline_would_not_yet() -> None:
    run = quickjs.run_program("for (;;) {}", timeout=30, fuel=50_000_000)
    assert (run.completed, run.fault) == (False, "fuel")


def test_output_past_the_limit_is_the_output_fault() -> None:
    run = quickjs.run_program(f"print('x'.repeat({quickjs.OUTPUT_LIMIT + 10}))")
    assert (run.completed, run.fault) == (False, "output")
    assert len(run.stdout) <= quickjs.OUTPUT_LIMIT


def test_the_heap_limit_is_an_out_of_memory_exception() -> None:
    run = quickjs.run_program("const a = []; for (;;) a.push(new Array(1 << 16).fill(0));")
    assert not run.completed
    assert "out of memory" in run.stderr


def test_an_exit_is_named() -> None:
    run = quickjs.run_program(STD + "std.exit(3)", module=True)
    assert (run.completed, run.fault, run.trap) == (False, "trap", "exit 3")
