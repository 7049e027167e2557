"""`python -m groundskeeper.cli.fork_server MODULE…`: runs `groundskeeper` commands as forked
children of one process that imported the modules they need once (the eval suite runs ~200
commands, each of which otherwise spends most of its CPU starting Python and importing).

Each command is a process of its own, forked from this one before this one ran anything: it
gets its own environment, working directory, process group, stdin from /dev/null and
stdout/stderr in the files it is given, runs `groundskeeper ARGS` as `python -m groundskeeper
ARGS` does, and ends as that process would in all anyone can see (exit status, threads
joined, atexit, output flushed; `_end`). This process runs no command and holds no thread;
it refuses to fork when another thread exists.

The protocol is one JSON object per line. Requests come on stdin: `{"id", "argv", "env",
"cwd", "stdout", "stderr"}`. Answers go to stdout: `{"id", "pid"}` once forked (or `{"id",
"error"}`), then `{"id", "status", "cpu"}` once the child ended (status as subprocess gives
it: -N for a signal; cpu in seconds). End of stdin ends the server; a child still running
then is killed, since no one is left to read its answer.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import select
import signal
import sys
import threading
from pathlib import Path
from typing import Any, NoReturn

import groundskeeper
from groundskeeper.cli.app import main as groundskeeper_main

PROG_NAME = "python -m groundskeeper"  # what click names the program under `python -m`


def _send(message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


def _threads() -> int:
    """Every thread of this process, the native ones too."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0  # not Linux: unknown, and nothing forks (see _fork)


def _unable() -> str | None:
    """Why this process cannot fork a command safely, or None."""
    if not hasattr(os, "pidfd_open"):
        return "this system has no pidfd_open"
    if _threads() != 1:
        return "the fork server holds a thread: a child could inherit a held lock"
    return None


def _fork(request: dict[str, Any], children: dict[int, tuple[int, Any]]) -> bool:
    """Fork a child for `request`: True in the child, False here (the answer sent)."""
    problem = _unable()
    if problem is not None:
        _send({"id": request["id"], "error": problem})
        return False
    try:
        pid = os.fork()
    except OSError as error:
        _send({"id": request["id"], "error": f"fork failed: {error}"})
        return False
    if pid == 0:
        for pidfd in children:
            os.close(pidfd)
        return True
    children[os.pidfd_open(pid)] = (pid, request["id"])
    _send({"id": request["id"], "pid": pid})
    return False


def _kill(ident: Any, children: dict[int, tuple[int, Any]]) -> None:
    """Kill a child's process group, only while it is unreaped: its pid is still its own."""
    for pid, other in children.values():
        if other == ident:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # before its setpgid: not yet a group of its own


def _reap(pidfd: int, children: dict[int, tuple[int, Any]]) -> None:
    pid, ident = children.pop(pidfd)
    os.close(pidfd)
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    _send({"id": ident, "status": os.waitstatus_to_exitcode(status), "cpu": round(cpu, 4)})


def serve() -> dict[str, Any] | None:
    """Answer requests until stdin ends (None); in a forked child, that child's request."""
    children: dict[int, tuple[int, Any]] = {}  # pidfd -> (pid, request id)
    pending = b""
    stdin_open = True
    while stdin_open or children:
        readable, _, _ = select.select(([0] if stdin_open else []) + list(children), [], [])
        for pidfd in readable:
            if pidfd != 0:
                _reap(pidfd, children)
        if 0 not in readable:
            continue
        data = os.read(0, 1 << 16)
        if not data:
            stdin_open = False
            for pid, _ in children.values():  # no one is left to read their answers
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            continue
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            request: dict[str, Any] = json.loads(line)
            if "kill" in request:
                _kill(request["kill"], children)
            elif _fork(request, children):
                return request  # in the child
    return None


def become(request: dict[str, Any]) -> None:
    """In a forked child: set up the process as the request asks and run the command; ends
    the process as `python -m groundskeeper` would (SystemExit from click)."""
    os.setpgid(0, 0)  # its own group: a timeout kills it and anything it started
    signal.signal(signal.SIGINT, signal.default_int_handler)  # ignored by the server
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [str(Path(groundskeeper.__file__).with_name("__main__.py")), *request["argv"]]
    try:
        groundskeeper_main(args=list(request["argv"]), prog_name=PROG_NAME)
        code = 0
    except SystemExit as done:  # as the interpreter reads it
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        if not isinstance(done.code, int | None):
            print(done.code, file=sys.stderr)
    except KeyboardInterrupt:
        _end(0, signal.SIGINT)  # as the interpreter ends on one: killed by SIGINT
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _end(code)


def _end(code: int, by_signal: int | None = None) -> NoReturn:
    """End the child as the interpreter ends a process in every way anyone can see: its
    non-daemon threads joined, atexit handlers run, stdout and stderr flushed. Then it exits
    without tearing its modules down: in a fork that walks, and so copies, every page the
    server's imports made (~50 ms of a command's CPU), and nothing is left to tear down that
    anyone could see."""
    shutdown: Any = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if by_signal is not None:
        signal.signal(by_signal, signal.SIG_DFL)
        os.kill(os.getpid(), by_signal)
    os._exit(code)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client ends the server, by closing stdin
    for name in sys.argv[1:]:
        importlib.import_module(name)
    # What the imports made lives as long as every child: out of the collector's sight, a
    # child's collections do not walk it (nor touch, and so copy, its pages).
    gc.freeze()
    request = serve()
    if request is not None:
        become(request)


if __name__ == "__main__":
    main()
