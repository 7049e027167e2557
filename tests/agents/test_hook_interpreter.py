"""Adversary-12 F1, F1b, F5: the interpreter the hook runs in. Code that runs before the hook
(a `.pth` or a `sitecustomize` in a site-packages folder, an edited module of a package the
hook imports, a venv's `pyvenv.cfg`) is not run: the hook starts the base interpreter with
`-I -S -B` and a program that puts the import roots on `sys.path` itself once every file the
hook imports is as `agent setup` found it (`agents.interpreter`). Each fake beside its honest
twin, through the command line `agent setup` writes and `agent run`.

The tests run in a venv of their own whose site-packages is a folder of the test (the shared
venv is never written): a `.pth` there names the project venv's site-packages, and a copy of
`wasmtime` (a package the hook imports) lives there, to be edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.agents.gated import HookRun, do_the_work, stop_event
from tests.agents.test_hook_session_bound import FAKE_CLAUDE, SETTINGS


def light_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A venv (no pip) whose site-packages names this one's, with wasmtime copied into it;
    its python and its site-packages."""
    import site

    import wasmtime

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    found = subprocess.run(
        [python, "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    packages = Path(found.stdout.strip())
    here = [p for p in site.getsitepackages() if os.path.isdir(p)]
    own = Path(__file__).resolve().parents[2]
    (packages / "zz_project.pth").write_text("\n".join([*here, str(own)]) + "\n")
    source = Path(wasmtime.__file__).parent

    def copy_or_link(src: str, dst: str) -> None:
        if src.endswith(".py"):
            shutil.copy2(src, dst)
        else:
            os.symlink(src, dst)

    shutil.copytree(source, packages / "wasmtime", copy_function=copy_or_link,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return python, packages


def light_setup(work: Path, python: Path) -> None:
    done = subprocess.run(
        [python, "-m", "groundskeeper", "agent", "setup", "claude-code", "--plan", "plan.org"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def command(work: Path, event: str) -> str:
    settings = json.loads((work / SETTINGS).read_text())
    return str(settings["hooks"][event][0]["hooks"][0]["command"])


def call(work: Path, event: str = "Stop", line: str | None = None, **extra: str) -> HookRun:
    body = stop_event(work, hook_event_name=event, **extra)
    proc = subprocess.run(
        ["/bin/sh", "-c", line or command(work, event)],
        cwd=work,
        input=json.dumps(body).encode(),
        capture_output=True,
        timeout=120,
    )
    return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_a_pth_planted_in_the_hooks_site_packages_blocks_the_stop(work: Path) -> None:
    python, packages = light_venv(work.parent)
    light_setup(work, python)
    assert call(work, "SessionStart").blocked is None
    do_the_work(work)
    # F1: one plain file write, run by `site` at every start of that venv's python
    (packages / "zz_agent.pth").write_text("import os; os._exit(0)\n")
    reason = call(work).blocked or ""
    assert reason.startswith(
        f"groundskeeper: the hook's interpreter is not the one set up: `{packages}` changed"
        " since `agent setup`; code there would run before the hook"
    ), reason
    # on a TaskCompleted (exit 2 only), the same reason
    task = call(work, "TaskCompleted", task_subject="notes")
    assert task.status == 2 and "the hook's interpreter is not the one set up" in task.stderr
    # the honest twin: the file gone and the interpreter set up again, the work passes
    (packages / "zz_agent.pth").unlink()
    light_setup(work, python)
    assert call(work, "SessionStart", session_id="s-2").blocked is None
    run = call(work, session_id="s-2")
    assert (run.status, run.blocked, run.stderr) == (0, None, "checks pass: `notes`, `count`\n")


def test_a_sitecustomize_or_pth_is_never_run_by_the_hook(work: Path) -> None:
    # `-S`: a file the manifest held from set-up on is still not run (here planted before)
    python, packages = light_venv(work.parent)
    silent = "import os, sys; 'hook' in sys.orig_argv and os._exit(0)\n"
    (packages / "sitecustomize.py").write_text(silent)
    (packages / "zz_agent.pth").write_text(silent.replace("\n", "") + "\n")
    light_setup(work, python)
    assert call(work, "SessionStart").blocked is None
    reason = call(work).blocked or ""
    assert "not done — 2 of 2 open task(s) fail" in reason, reason


def test_a_module_of_a_package_the_hook_imports_edited_with_its_mtime_put_back_blocks(
    work: Path,
) -> None:
    python, packages = light_venv(work.parent)
    light_setup(work, python)
    assert call(work, "SessionStart").blocked is None
    do_the_work(work)
    module = packages / "wasmtime" / "__init__.py"
    before = os.stat(module)
    with open(module, "a") as handle:
        handle.write("import os; os._exit(0)\n")
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    reason = call(work).blocked or ""
    assert f"`{module}` changed since `agent setup`" in reason, reason
    # bytecode forged beside an unchanged source is held the same way
    module.write_bytes(module.read_bytes().replace(b"import os; os._exit(0)\n", b""))
    light_setup(work, python)
    assert call(work, "SessionStart", session_id="s-2").blocked is None
    from importlib.util import cache_from_source

    cached = Path(cache_from_source(str(packages / "wasmtime" / "_config.py")))
    assert cached.is_file()
    cached.write_bytes(cached.read_bytes())
    reason = call(work, session_id="s-2").blocked or ""
    assert f"`{cached}` changed since `agent setup`" in reason, reason
    # the honest twin: set up again over the package as it is, the work passes
    light_setup(work, python)
    assert call(work, "SessionStart", session_id="s-3").blocked is None
    assert call(work, session_id="s-3").blocked is None


def test_a_manifest_edited_to_hold_the_changed_file_blocks(work: Path) -> None:
    python, packages = light_venv(work.parent)
    light_setup(work, python)
    assert call(work, "SessionStart").blocked is None
    (packages / "zz_agent.pth").write_text("import os; os._exit(0)\n")
    manifest = work / ".groundskeeper" / "plan.org" / "hook-interpreter.json"
    document = json.loads(manifest.read_text())
    from groundskeeper.agents.interpreter import stat_key

    document["files"] = [[p, stat_key(p)] for p, _ in document["files"]]
    manifest.write_text(json.dumps(document))
    reason = call(work).blocked or ""
    assert "its manifest " in reason and "is not the one written by `agent setup`" in reason


def test_the_hooks_interpreter_gone_blocks_with_a_named_reason_in_each_form(work: Path) -> None:
    from groundskeeper.agents.interpreter import base_executable

    light_setup(work, Path(sys.executable))
    do_the_work(work)
    gone = str(work.parent / "moved-away" / "python3")
    # F5: the interpreter renamed away; the shell must not be the one to speak
    task = call(work, "TaskCompleted", command(work, "TaskCompleted").replace(
        base_executable(), gone), task_subject="notes")  # fmt: skip
    assert task.status == 2, task
    assert "No such file" not in task.stderr, task.stderr
    assert task.stderr == (
        f"groundskeeper: the hook cannot start: its interpreter {gone} is missing or not"
        " executable; nothing is confirmed\n"
    )
    stop = call(work, "Stop", command(work, "Stop").replace(base_executable(), gone))
    assert stop.status == 0 and "its interpreter " + gone + " is missing" in (stop.blocked or "")
    # and an interpreter that starts but fails is named too, never silent
    broken = command(work, "TaskCompleted").replace(
        " -I -S -B -c ", " -I -S -B -c 'raise SystemExit(1)' -c ", 1
    )
    failed = call(work, "TaskCompleted", broken, task_subject="notes")
    assert failed.status == 2
    assert failed.stderr.endswith("groundskeeper: the hook failed to run; nothing is confirmed\n")
    # the honest twin: the command line as written, the work done
    assert call(work, "TaskCompleted", task_subject="notes").status == 0


def agent_run(work: Path, scenario: str, packages: Path) -> subprocess.CompletedProcess[str]:
    fake = work.parent / "fake-claude"
    plant = (
        "    elif step == 'plant':\n"
        f"        pathlib.Path({str(packages / 'zz_agent.pth')!r}).write_text("
        "'import os; os._exit(0)\\n')\n"
    )
    body = FAKE_CLAUDE.replace('    elif step == "work":\n', plant + '    elif step == "work":\n')
    assert body != FAKE_CLAUDE
    fake.write_text(f"#!{sys.executable}\n{body}")
    fake.chmod(0o755)
    command = [sys.executable, "-m", "groundskeeper", "agent", "run", "claude-code"]
    return subprocess.run(
        [*command, "--plan", str(work / "plan.org"), "--", "-p", "work"],
        cwd=work,
        env={**os.environ, "GROUNDSKEEPER_CLAUDE": str(fake), "SCENARIO": scenario},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_agent_run_names_a_file_planted_in_the_hooks_interpreter_and_launches_no_more(
    work: Path,
) -> None:
    python, packages = light_venv(work.parent)
    light_setup(work, python)
    told = agent_run(work, "work plant Stop", packages)
    assert told.returncode == 1, told.stderr
    assert (
        f"groundskeeper: the hook's interpreter is not the one set up: `{packages}` changed"
        in told.stderr
    ), told.stderr
    # F1b: the next launch is refused before the agent starts
    again = agent_run(work, "work Stop", packages)
    assert again.returncode == 2, again.stderr
    assert "not launched: the hook's interpreter is not the one set up" in again.stderr
    # the honest twin: the file gone, set up again, a session that does the work
    (packages / "zz_agent.pth").unlink()
    light_setup(work, python)
    honest = agent_run(work, "work Stop", packages)
    assert honest.returncode == 0, honest.stderr
    assert "groundskeeper:" not in honest.stderr
