"""The eval suite forks its cases' commands from one server (issue 27's suite figure): every
command goes through it, a command it cannot fork runs as a plain subprocess with the same
verdict, and a command lost with the server is a crash, never run a second time."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.evals import run as evals
from groundskeeper.evals.fork_client import ForkLost, ForkServer, ForkUnavailable
from tests.test_evals import CHECK, CLAIM, FAKE, HONEST, WRITE_42, make_case, run_eval


def _suite(tmp_path: Path) -> str:
    make_case(tmp_path / "s", "fake", CHECK, CLAIM, FAKE)
    make_case(tmp_path / "s", "honest", CHECK, WRITE_42, HONEST)  # resume, then ledger verify
    return str(tmp_path / "s")


def _verdicts(doc: dict[str, Any]) -> list[tuple[str, str, bool, str | None]]:
    return [(c["case"], c["actual"], c["passed"], c["caught_by"]) for c in doc["cases"]]


EXPECTED = [("s/fake", "FAILED", True, "nonzero_status"), ("s/honest", "DONE", True, None)]


def test_every_command_of_the_suite_is_forked_from_one_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forked: list[list[str]] = []
    servers: list[ForkServer] = []
    real_run, real_init = ForkServer.run, ForkServer.__init__
    started: list[list[str]] = []
    real_subprocess = subprocess.run

    def init(self: ForkServer, *args: Any, **kwargs: Any) -> None:
        servers.append(self)
        real_init(self, *args, **kwargs)

    def run(self: ForkServer, argv: Sequence[str], **kwargs: Any) -> Any:
        done = real_run(self, argv, **kwargs)
        forked.append(list(argv))
        return done

    def no_subprocess(cmd: list[str], **kwargs: Any) -> Any:
        started.append(cmd)
        return real_subprocess(cmd, **kwargs)  # the cache's warm-up only

    monkeypatch.setattr(ForkServer, "__init__", init)
    monkeypatch.setattr(ForkServer, "run", run)
    monkeypatch.setattr(evals.subprocess, "run", no_subprocess)
    result, doc = run_eval(_suite(tmp_path), "--jobs", "2")
    assert result.exit_code == 0, doc
    assert _verdicts(doc) == EXPECTED
    assert len(servers) == 1
    assert sorted(argv[0] for argv in forked) == ["ledger", "resume", "resume"]
    assert all(cmd[3] in ("sh", "validate-script") for cmd in started)  # nothing of a case


def test_a_command_the_server_cannot_fork_runs_as_a_subprocess(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: ForkServer, argv: Sequence[str], **kwargs: Any) -> Any:
        raise ForkUnavailable("refused for the test")

    monkeypatch.setattr(ForkServer, "run", refuse)
    result, doc = run_eval(_suite(tmp_path), "--jobs", "2")
    assert result.exit_code == 0, doc
    assert _verdicts(doc) == EXPECTED


def test_a_command_lost_with_the_server_is_a_crash_and_is_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lost(self: ForkServer, argv: Sequence[str], **kwargs: Any) -> Any:
        raise ForkLost(f"the fork server ended while `{' '.join(argv[:2])}` ran")

    started: list[list[str]] = []
    real = subprocess.run

    def spy(cmd: list[str], **kwargs: Any) -> Any:
        started.append(cmd)
        return real(cmd, **kwargs)

    monkeypatch.setattr(ForkServer, "run", lost)
    monkeypatch.setattr(evals.subprocess, "run", spy)
    result, doc = run_eval(_suite(tmp_path), "--jobs", "1")
    assert result.exit_code == 1
    for row in doc["cases"]:
        assert row["actual"] == "crash" and row["scored"] is False
        assert row["error"].startswith("crash: the fork server ended while `resume")
    assert not [cmd for cmd in started if "resume" in cmd]
