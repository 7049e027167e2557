"""Running `groundskeeper` commands through a fork server (`groundskeeper.cli.fork_server`):
each command is still a process of its own, with its own environment, working directory and
output, but it starts as a fork of a process that imported groundskeeper once, instead of a
fresh interpreter importing it again (most of a short command's CPU).

It owns the server process and the waiting on its answers; what to run is the caller's.
`ForkUnavailable` says a command could not be forked (the server refused, is gone, or the
environment differs from the server's in more than the home): the caller runs it as a plain
subprocess instead, with the same result.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["ForkLost", "ForkServer", "ForkUnavailable"]

# Differs from command to command; anything else in the environment could change how the
# interpreter starts (PYTHONPATH, hash seed, locale, …), so it must equal the server's.
PER_COMMAND = frozenset({"GROUNDSKEEPER_HOME"})
KILL_WAIT = 10.0  # seconds to wait for a killed child's end to be reported


class ForkUnavailable(Exception):
    """The command was not started; run it as a plain subprocess."""


class ForkLost(subprocess.SubprocessError):
    """The server ended while the command ran: how the command ended is unknown (it was
    killed with the server), and it must not be run again as if it had not run."""


@dataclass
class _Call:
    pid: int | None = None
    status: int | None = None
    cpu: float | None = None
    error: str | None = None


class ForkServer:
    """One server process; `run` may be called from several threads at once."""

    def __init__(self, env: Mapping[str, str], preload: Sequence[str] = ()) -> None:
        self.env = {k: v for k, v in env.items() if k not in PER_COMMAND}
        self._dir = Path(tempfile.mkdtemp(prefix="gk-forks-"))
        self._ids = itertools.count()
        self._calls: dict[int, _Call] = {}
        self._changed = threading.Condition()
        self._write = threading.Lock()
        self._alive = True
        self._server_log = (self._dir / "server.log").open("wb")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "groundskeeper.cli.fork_server", *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._server_log,
            env=self.env,
            cwd=self._dir,
        )
        assert self._process.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self._process.stdout,), name="fork-server", daemon=True
        )
        self._reader.start()

    @property
    def pid(self) -> int:
        """The server process's id."""
        return self._process.pid

    @property
    def alive(self) -> bool:
        """Whether the server still answers (False once it has ended or was closed)."""
        with self._changed:
            return self._alive and self._process.poll() is None

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            message: dict[str, Any] = json.loads(line)
            with self._changed:
                call = self._calls.get(message["id"])
                if call is not None:
                    call.pid = message.get("pid", call.pid)
                    call.error = message.get("error")
                    if "status" in message:
                        call.status, call.cpu = message["status"], message.get("cpu")
                self._changed.notify_all()
        with self._changed:
            self._alive = False
            self._changed.notify_all()

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        try:
            with self._write:
                self._process.stdin.write((json.dumps(message) + "\n").encode())
                self._process.stdin.flush()
        except (OSError, ValueError) as error:  # the server is gone, or closed
            raise ForkUnavailable(f"the fork server is gone: {error}") from None

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """`groundskeeper ARGV` as `subprocess.run(..., capture_output=True, text=True,
        timeout=timeout)` would run it; raises subprocess.TimeoutExpired after killing it, and
        ForkUnavailable when it was not started."""
        differs = sorted(
            k
            for k in set(env) | set(self.env)
            if k not in PER_COMMAND and env.get(k) != self.env.get(k)
        )
        if differs:
            raise ForkUnavailable(f"the environment differs from the server's: {differs}")
        ident = next(self._ids)
        out, err = self._dir / f"{ident}.out", self._dir / f"{ident}.err"
        call = _Call()
        with self._changed:
            if not self._alive:
                raise ForkUnavailable("the fork server is gone")
            self._calls[ident] = call
        cmd = [sys.executable, "-m", "groundskeeper", *argv]
        try:
            self._send({"id": ident, "argv": list(argv), "env": dict(env), "cwd": str(cwd),
                        "stdout": str(out), "stderr": str(err)})  # fmt: skip
            with self._changed:  # the timeout counts from the request: a busy server too
                ended = self._changed.wait_for(
                    lambda: call.status is not None or call.error is not None or not self._alive,
                    timeout,
                )
            if call.error is not None:
                raise ForkUnavailable(call.error)
            if call.pid is None and call.status is None and not self._alive:
                raise ForkUnavailable("the fork server is gone")
            if not ended:
                # The server reads this after the request, so it has forked the command by
                # then, and kills it only while it has not reaped it: never another process.
                with contextlib.suppress(ForkUnavailable):  # gone: it killed its children
                    self._send({"kill": ident})
                if call.pid is not None:  # running: wait for its end, as subprocess.run does
                    with self._changed:
                        self._changed.wait_for(
                            lambda: call.status is not None or not self._alive, KILL_WAIT
                        )
                raise subprocess.TimeoutExpired(cmd, timeout, output=_text(out), stderr=_text(err))
            if call.status is None:
                raise ForkLost(f"the fork server ended while `{' '.join(argv[:2])}` ran")
            return subprocess.CompletedProcess(cmd, call.status, _text(out), _text(err))
        finally:
            with self._changed:
                self._calls.pop(ident, None)
            for path in (out, err):
                with contextlib.suppress(OSError):
                    path.unlink()

    def close(self) -> None:
        """End the server (a command still running is killed) and remove its files."""
        if self._process.stdin is not None:
            with self._write, contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=KILL_WAIT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(timeout=KILL_WAIT)
        self._server_log.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""
