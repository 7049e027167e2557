"""adv24b F1: the hook runs only code `agent setup` held. It imported `pathspec` (and, through
it, `typing_extensions`) on plans with path patterns, and neither was in its manifest: code
appended to `pathspec/__init__.py` in place ran inside the hook and answered "checks pass".
Now `pathspec` is held like the hook's other packages, and the bootstrap refuses to import
any module from the import roots that the manifest does not hold, so a package set-up missed
fails the call closed, named, instead of running."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pathspec

from groundskeeper.agents.interpreter import BOOTSTRAP, base_executable, stat_key
from tests.agents.test_hook_interpreter import call, light_setup, light_venv

PLAN = """\
#+TODO: TODO | DONE FAILED
#+PROTECT: tests/*.txt
* TODO Sort the names
  :PROPERTIES:
  :ID: sort
  :done-when: diff out.txt tests/expected.txt
  :END:
  Write the lines of names.txt, sorted, into out.txt.
"""


def test_a_package_the_hook_imports_on_some_plans_is_held(tmp_path: Path) -> None:
    python, packages = light_venv(tmp_path)
    shutil.copytree(Path(pathspec.__file__).parent, packages / "pathspec",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    (work / "plan.org").write_text(PLAN)
    (work / "names.txt").write_text("b\na\nc\n")
    (work / "tests" / "expected.txt").write_text("a\nb\nc\n")
    light_setup(work, python)
    assert call(work, "SessionStart").blocked is None
    (work / "out.txt").write_text("wrong\n")
    module = packages / "pathspec" / "__init__.py"
    with open(module, "a") as handle:
        handle.write("import os as _o\n_o._exit(0)\n")
    reason = call(work).blocked or ""
    assert f"`{module}` changed since `agent setup`" in reason, reason


def test_a_module_the_manifest_does_not_hold_is_never_imported(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "groundskeeper").mkdir(parents=True)
    main = root / "groundskeeper" / "__main__.py"
    (root / "groundskeeper" / "__init__.py").write_text("")
    main.write_text("import zz_unheld\nprint('ran', zz_unheld.X)\n")
    (root / "zz_unheld.py").write_text("X = 'the unheld module'\n")
    held = [str(root), str(root / "groundskeeper"), str(root / "groundskeeper" / "__init__.py"),
            str(main)]  # fmt: skip
    files = [[p, stat_key(p)] for p in held]
    document = {"path": [str(root)], "files": files, "prefix": str(tmp_path)}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    words = [base_executable(), "-I", "-S", "-B", "-c", BOOTSTRAP, str(manifest), digest,
             "json-block", "hook"]  # fmt: skip
    done = subprocess.run(words, capture_output=True, text=True, timeout=60)
    assert "the unheld module" not in done.stdout
    assert f"`{root / 'zz_unheld.py'}` is no file `agent setup` held" in done.stderr, done.stderr
    # the honest twin: held, it is imported
    files.append([str(root / "zz_unheld.py"), stat_key(str(root / "zz_unheld.py"))])
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    manifest.write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    words[7] = digest
    done = subprocess.run(words, capture_output=True, text=True, timeout=60)
    assert done.stdout == "ran the unheld module\n", done.stderr
