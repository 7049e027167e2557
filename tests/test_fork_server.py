"""The fork server (`groundskeeper.cli.fork_server`, `groundskeeper.fork_client`): a forked
command answers exactly as `python -m groundskeeper` does, in its own home, directory and
process, and ends as a Python process ends; a command past its time is killed; the server
refuses to fork when it is not safe to, and then nothing was started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from groundskeeper.evals.fork_client import ForkLost, ForkServer, ForkUnavailable

PRELOAD = ("groundskeeper.cli.lint_cmd", "groundskeeper.cli.ledger_cmd", "groundskeeper.cli.sh_cmd")


def _env(home: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GROUNDSKEEPER_HOME"}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**env, "GROUNDSKEEPER_HOME": str(home), **more}


def _direct(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundskeeper", *argv],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_forked_command_answers_as_a_subprocess_does(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    plan = tmp_path / "plan.org"
    task = "* TODO {0}\n  :PROPERTIES:\n  :ID: a\n  :END:\n"
    plan.write_text(task.format("a") + task.format("b"), encoding="utf-8")  # a duplicate id
    env = _env(tmp_path / "home")
    commands = [
        ["lint", str(plan), "--json"],  # findings: exit 1
        ["lint", str(plan)],
        ["ledger", "verify", str(plan), "--no-such-option"],  # usage: exit 2
        ["--version"],
    ]
    with ForkServer(env, PRELOAD) as server:
        for argv in commands:
            forked = server.run(argv, env=env, cwd=tmp_path, timeout=60)
            direct = _direct(argv, env, tmp_path)
            assert (forked.returncode, forked.stdout, forked.stderr) == (
                direct.returncode,
                direct.stdout,
                direct.stderr,
            ), argv
            assert forked.args == [sys.executable, "-m", "groundskeeper", *argv]
    assert _direct(commands[0], env, tmp_path).returncode == 1
    assert _direct(commands[2], env, tmp_path).returncode == 2


def test_each_command_has_its_own_home_directory_and_process(tmp_path: Path) -> None:
    homes = [tmp_path / "h0", tmp_path / "h1"]
    for home in homes:
        home.mkdir()
    results: dict[int, subprocess.CompletedProcess[str]] = {}
    with ForkServer(_env(homes[0]), PRELOAD) as server:

        def keygen(i: int) -> None:
            results[i] = server.run(
                ["keygen", "--json"], env=_env(homes[i]), cwd=homes[i], timeout=60
            )

        threads = [threading.Thread(target=keygen, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    keys = [json.loads(results[i].stdout) for i in (0, 1)]
    for i, home in enumerate(homes):
        assert keys[i]["created"] is True
        assert keys[i]["private_key"] == str(home / "signing_key.pem")
        assert (home / "signing_key.pem").is_file()
    assert keys[0]["key_id"] != keys[1]["key_id"]  # each made its own, randomly


def test_a_command_past_its_time_is_killed_with_its_group(tmp_path: Path) -> None:
    env = _env(tmp_path)
    with ForkServer(env, PRELOAD) as server:
        server.run(["--version"], env=env, cwd=tmp_path, timeout=60)  # the preload is done
        started = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired) as raised:
            server.run(["sh", "--timeout", "30", "--", "sleep 20"], env=env, cwd=tmp_path,
                       timeout=1.0)  # fmt: skip
        assert time.monotonic() - started < 8
        assert raised.value.timeout == 1.0
        # after the timeout the server answers the next command at once
        again = server.run(["--version"], env=env, cwd=tmp_path, timeout=60)
        assert (again.returncode, again.stdout) == (0, "groundskeeper, version 0.1.0\n")


def test_the_server_refuses_to_fork_while_it_holds_a_thread(tmp_path: Path) -> None:
    """A module that leaves a thread running makes forking unsafe (a child could inherit a
    lock that thread holds): nothing is started, and the caller is told so."""
    (tmp_path / "threaded_module.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
        encoding="utf-8",
    )
    env = _env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(tmp_path)])
    with (
        ForkServer(env, ("threaded_module",)) as server,
        pytest.raises(ForkUnavailable, match="holds a thread"),
    ):
        server.run(["keygen"], env=env, cwd=tmp_path, timeout=60)
    assert not (tmp_path / "signing_key.pem").exists()


def test_an_environment_that_differs_in_more_than_the_home_is_not_forked(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    with ForkServer(env, PRELOAD) as server:
        with pytest.raises(ForkUnavailable, match="PYTHONHASHSEED"):
            server.run(["--version"], env={**env, "PYTHONHASHSEED": "1"}, cwd=tmp_path,
                       timeout=60)  # fmt: skip
        other_home = server.run(["--version"], env=_env(tmp_path / "x"), cwd=tmp_path,
                                timeout=60)  # fmt: skip
        assert other_home.returncode == 0


def test_a_server_that_is_gone_starts_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path)
    server = ForkServer(env, PRELOAD)
    server.close()
    with pytest.raises(ForkUnavailable):
        server.run(["keygen"], env=env, cwd=tmp_path, timeout=60)
    assert not (tmp_path / "signing_key.pem").exists()


def test_closing_the_server_kills_a_command_still_running(tmp_path: Path) -> None:
    env = _env(tmp_path)
    server = ForkServer(env, PRELOAD)
    server.run(["--version"], env=env, cwd=tmp_path, timeout=60)
    ended: list[subprocess.CompletedProcess[str] | BaseException] = []

    def slow() -> None:
        try:
            ended.append(server.run(["sh", "--timeout", "30", "--", "sleep 20"], env=env,
                                    cwd=tmp_path, timeout=60))  # fmt: skip
        except (ForkLost, ForkUnavailable, subprocess.TimeoutExpired) as error:
            ended.append(error)

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(1.0)
    started = time.monotonic()
    server.close()
    thread.join(timeout=15)
    assert time.monotonic() - started < 10
    assert len(ended) == 1
    killed = ended[0]
    assert isinstance(killed, subprocess.CompletedProcess)
    assert killed.returncode == -signal.SIGKILL


EXIT_HOOK = """
import atexit, os

def _at_exit():
    home = os.environ.get("GROUNDSKEEPER_HOME")  # a command's own; the server has none
    if home:
        with open(os.path.join(home, "exit-mark"), "a") as f:
            f.write(f"atexit {os.getcwd()}\\n")

atexit.register(_at_exit)
"""


def test_a_forked_command_ends_as_a_python_process_ends(tmp_path: Path) -> None:
    """atexit handlers run in the child, with its own environment and directory, as they do
    at the end of `python -m groundskeeper`: the child is not cut short with os._exit."""
    (tmp_path / "exit_hook.py").write_text(EXIT_HOOK, encoding="utf-8")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = _env(home)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(tmp_path)])
    with ForkServer(env, ("exit_hook", *PRELOAD)) as server:
        done = server.run(["--version"], env=env, cwd=work, timeout=60)
    assert done.returncode == 0
    assert (home / "exit-mark").read_text(encoding="utf-8") == f"atexit {work}\n"
