"""groundskeeper's warm start for CPython in the sandbox, the guest's half.

Set-up runs `python3 -c "__import__('gk_warm').ready()"` once: pytest and its plugins are
imported, and the host keeps the interpreter's memory at the `os.sched_yield()` below (the
image). A later `python3 -m pytest …` resumes there instead of starting CPython again: it
reads what to run from the request the host left in its private /tmp, makes itself what a
cold start of that command would be (environment, directory, `sys.argv`, fresh import caches
and random state), and runs the module as `-m` does. Outside a warm start (a plain
`sched_yield`), there is no request, and it says so.
"""

from __future__ import annotations

import os
import sys

_REQUEST = "/tmp/.gk-warm"  # cpython_warm.REQUEST, in the guest's private /tmp


def ready() -> None:
    _preload()
    os.sched_yield()  # the image is taken here; every warm start resumes here
    _run()


def _preload() -> None:
    import contextlib
    import importlib

    import pytest  # noqa: F401  # the point: imported once, at set-up
    from _pytest.config import default_plugins

    for name in (f"_pytest.{plugin}" for plugin in default_plugins):  # what pytest imports
        # one this interpreter cannot have is left out: pytest imports it or does without
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    sys.stdout.flush()
    sys.stderr.flush()
    # what is imported by now lives as long as the interpreter: kept out of every collection
    # (pytest collects, in full, several times a run)
    import gc

    gc.collect()
    gc.freeze()


def _run() -> None:
    import json
    import runpy

    try:
        with open(_REQUEST, "rb") as handle:
            request = json.loads(handle.read())
        os.remove(_REQUEST)
    except OSError:
        sys.exit("gk_warm: not a warm start (there is no request to run)")
    argv = [str(arg) for arg in request["argv"]]
    os.environ.clear()
    os.environ.update({str(key): str(value) for key, value in request["env"]})
    os.environ.pop("GK_ARGV0", None)
    startup = sys.modules["sitecustomize"]  # the site directory's, imported by `site`
    startup._enter()
    _fresh(startup._trusted)
    at = argv.index("-m", 1)  # after the options the image was taken with
    sys.orig_argv = argv
    sys.argv = ["-m", *argv[at + 2 :]]
    sys.path[0] = "."  # what a cold `python3 -m` has first (it cannot ask WASI for its cwd)
    try:
        runpy._run_module_as_main(argv[at + 1])  # type: ignore[attr-defined]
    except SystemExit:
        raise
    except BaseException as error:  # printed as a cold start prints it, then status 1
        trace = error.__traceback__
        first = runpy._run_module_as_main.__code__  # type: ignore[attr-defined]
        while trace is not None and trace.tb_frame.f_code is not first:
            trace = trace.tb_next
        if trace is not None:  # shown from the exception's own traceback
            error.__traceback__ = trace
        sys.excepthook(type(error), error, error.__traceback__)
        sys.exit(1)


def _fresh(trusted: object) -> None:
    """What the image carries from set-up that a cold start would not have: finders that
    cached directories of that run's (empty) workdir, and its random state. (Not
    `importlib.invalidate_caches()`: it reads the standard library's zip directory again,
    ~0.2 s, and nothing of the interpreter's own read-only folders has changed.)"""
    for entry in list(sys.path_importer_cache):
        if not trusted(entry):  # type: ignore[operator]
            del sys.path_importer_cache[entry]
    random = sys.modules.get("random")
    if random is not None:
        random.seed()
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile._name_sequence = None  # type: ignore[attr-defined]
