"""A hook call starts with the cyclic collector off (`groundskeeper.collector`) and runs its
checks with it on: the Stop's checks, in the process the command line `agent setup` wrote
starts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.agents.gated import do_the_work, make_work, set_up_stop_hook, stop_event

#: Put before the launcher's own code: each check the gate runs notes whether the collector
#: was on, and whether it was on when the gate was imported.
SPY = """\
import gc, sys
_gk_seen = []
def _gk_spy(event, args):  # an audit hook: whatever finders the bootstrap puts first
    if event == "import" and args[0] == "groundskeeper.agents.gate" and not _gk_seen:
        _gk_seen.append(("import", gc.isenabled()))
sys.addaudithook(_gk_spy)
import os as _gk_os
_gk_exit = _gk_os._exit
def _gk_leave(status):
    with open(_gk_os.environ["GK_SPY_OUT"], "w") as out:
        out.write(__import__("json").dumps(_gk_seen))
    _gk_exit(status)
_gk_os._exit = _gk_leave
def _gk_wrap():
    import groundskeeper.agents.gate as gate
    run = gate.run_check
    def spied(*args, **kwargs):
        _gk_seen.append(("check", gc.isenabled()))
        return run(*args, **kwargs)
    gate.run_check = spied
"""


def test_a_stop_runs_its_checks_with_the_collector_on(tmp_path: Path) -> None:
    from groundskeeper.record.keys import create_signing_key

    create_signing_key()
    work = make_work(tmp_path / "work", "TODO")
    do_the_work(work)
    env = {**os.environ}
    hook, assigned = set_up_stop_hook(work, env)
    at = hook.index("-c") + 1
    # the gate's run_check is wrapped as soon as the gate is imported
    code = hook[at].replace(
        "import groundskeeper.__main__",
        "import builtins\n"
        "_gk_import = builtins.__import__\n"
        "def _gk_hooked(name, *a, **k):\n"
        "    module = _gk_import(name, *a, **k)\n"
        '    if name == "groundskeeper.agents.gate" and not getattr(_gk_wrap, "done", 0):\n'
        "        _gk_wrap.done = 1\n"
        "        _gk_wrap()\n"
        "    return module\n"
        "builtins.__import__ = _gk_hooked\n"
        "import groundskeeper.__main__",
    )
    assert code != hook[at]
    out = tmp_path / "spy.txt"
    proc = subprocess.run(
        [*hook[:at], SPY + code, *hook[at + 1 :]],
        input=json.dumps(stop_event(work)).encode(),
        capture_output=True,
        env={**env, **assigned, "GK_SPY_OUT": str(out)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout == b"", proc.stdout  # allowed: both checks ran and passed
    seen = json.loads(out.read_text())
    assert seen == [["import", False], ["check", True], ["check", True]]
