"""The wheel as a user gets it (`make wheel-check`; `make test` runs it): `pip wheel` of this
checkout, a fresh virtual environment with nothing but that wheel and its dependencies, and
`groundskeeper eval --jobs 2` run from an empty directory with an empty home. It must end
`eval: N passed, 0 failed` with every shipped case, CPython for the sandbox having been set
up on first need (no `make setup`: a pip user has no Makefile), saying so once on stderr.

    python -m tests.wheel_check [--keep DIR]

Exit 0 when it holds; otherwise 1, with what was wrong. About three minutes: installing the
dependencies (from pip's cache), compiling CPython once (40-100 s), the suite itself.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TALLY = re.compile(r"eval: (\d+) passed, (\d+) failed")
SET_UP = "groundskeeper: setting up CPython 3.12.0 for the sandbox in "


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise SystemExit(f"wheel check: `{' '.join(cmd)}` exited {done.returncode}:\n{tail}")


def check(root: Path) -> list[str]:
    """What is wrong with the wheel's eval (nothing: an empty list)."""
    wheels, venv, empty, home = root / "wheels", root / "venv", root / "empty", root / "home"
    empty.mkdir()
    started = time.monotonic()
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)])
    (wheel,) = wheels.glob("groundskeeper-*.whl")
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)])
    installed = time.monotonic()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "GROUNDSKEEPER_HOME": str(home / "gk")}  # fmt: skip
    done = subprocess.run(
        [str(venv / "bin" / "groundskeeper"), "eval", "--jobs", "2"],
        capture_output=True, text=True, check=False, cwd=empty, env=env, timeout=1200,
    )  # fmt: skip
    ended = time.monotonic()
    problems = []
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    tally = TALLY.fullmatch(last)
    if tally is None:
        problems.append(f"the last line of stdout is {last!r}, not `eval: N passed, M failed`")
    elif int(tally[2]) != 0 or int(tally[1]) < 100:
        failed = [x for x in done.stderr.splitlines() if "✘" in x]
        problems.append(f"{last}:\n" + "\n".join(failed[:20]))
    if done.returncode != 0:
        problems.append(f"eval exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    said = [x for x in done.stderr.splitlines() if x.startswith(SET_UP)]
    if len(said) != 1:
        problems.append(f"the set-up was announced {len(said)} times on stderr, not once")
    print(
        f"wheel check: {last} (wheel and venv {installed - started:.0f} s, eval with the "
        f"first set-up {ended - installed:.0f} s)",
        file=sys.stderr,
    )
    return problems


def main(argv: list[str]) -> int:
    keep = Path(argv[argv.index("--keep") + 1]) if "--keep" in argv else None
    if keep is not None:
        keep.mkdir(parents=True)
        problems = check(keep)
    else:
        with tempfile.TemporaryDirectory(prefix="gk-wheel-check-") as tmp:
            problems = check(Path(tmp))
    for problem in problems:
        print(f"wheel check: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
