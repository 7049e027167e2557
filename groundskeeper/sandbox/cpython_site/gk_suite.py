"""groundskeeper's record of one test-suite run (`-p gk_suite`, loaded by the `pytest`
contract only): what was collected, deselected and how each test ended, whether the
machinery deciding pass or fail was replaced while the suite ran, and the values from the
work that compared equal to anything in an assertion. Written once, at the end, to the file
the host named (in the run's private /tmp); a run that ends before pytest does leaves no
record, which the host reads as a failure.

It runs in the same interpreter as the code under test, so code written against it can
forge its record (docs/plans.md says so, and why no design here can prevent that).
"""

import builtins
import json
import os
import secrets
import sys
from typing import Any

_TARGET = os.environ.pop("GK_SUITE_REPORT", "")
# the suite's own directory (protected with it): a matcher of its own is the suite's choice
_SUITE = os.environ.pop("GK_SUITE_PATH", "/workdir/tests")
_BUILTINS = (
    "AssertionError", "BaseException", "Exception", "SystemExit", "isinstance", "issubclass",
    "len", "bool", "int", "str", "float", "list", "dict", "tuple", "set", "type", "object",
    "getattr", "hasattr", "repr", "all", "any", "sorted", "compile", "exec", "__import__",
)  # fmt: skip


def _machinery() -> dict[str, object]:
    """Every object whose replacement could turn a failure into a pass, by name."""
    import unittest.case

    import _pytest.outcomes
    import _pytest.python
    import _pytest.reports
    import _pytest.runner
    import pluggy._callers
    import pluggy._hooks
    import pluggy._manager
    import pytest

    found: dict[str, object] = {f"builtins.{name}": getattr(builtins, name) for name in _BUILTINS}
    found.update({
        "sys.exit": sys.exit, "os._exit": os._exit,
        "pytest.approx": pytest.approx, "pytest.raises": pytest.raises,
        "pytest.fail": pytest.fail, "pytest.skip": pytest.skip,
        # from the class's own namespace: a classmethod looked up anew is a new object
        "_pytest.python.Function.runtest": vars(_pytest.python.Function)["runtest"],
        "_pytest.python.pytest_pyfunc_call": _pytest.python.pytest_pyfunc_call,
        "_pytest.runner.call_and_report": _pytest.runner.call_and_report,
        "_pytest.runner.pytest_runtest_call": _pytest.runner.pytest_runtest_call,
        "_pytest.runner.CallInfo.from_call": vars(_pytest.runner.CallInfo)["from_call"],
        "_pytest.reports.TestReport.from_item_and_call":
            vars(_pytest.reports.TestReport)["from_item_and_call"],
        "_pytest.outcomes.fail": _pytest.outcomes.fail,
        # what calls every hook implementation: a plugin's answer reaches pytest through it
        "pluggy._callers._multicall": pluggy._callers._multicall,
        "pluggy.PluginManager._hookexec": vars(pluggy._manager.PluginManager)["_hookexec"],
        "pluggy.HookCaller.__call__": vars(pluggy._hooks.HookCaller)["__call__"],
        "pluggy.HookCaller.get_hookimpls": vars(pluggy._hooks.HookCaller)["get_hookimpls"],
        "pluggy.PluginManager.get_plugins": vars(pluggy._manager.PluginManager)["get_plugins"],
    })  # fmt: skip
    if _config:
        found["pluginmanager._inner_hookexec"] = _config[0].pluginmanager._inner_hookexec
    for name, value in vars(unittest.case.TestCase).items():
        if name.startswith(("assert", "fail", "run", "_call")):
            found[f"unittest.TestCase.{name}"] = value
    return found


_config: list[Any] = []  # pytest's Config, once pytest_configure has run
_BEFORE = {name: id(value) for name, value in _machinery().items()}
_collected: list[str] = []
_deselected: list[str] = []
_errors: list[str] = []
_skipped_files: list[str] = []  # modules skipped at collection (a module-level importorskip)
_tampered: list[str] = []
_outcomes: dict[str, str] = {}
_failures: dict[str, str] = {}  # a failed test → how it failed (its crash's message)
_always_equal: list[str] = []
_running = [""]  # the test whose assertions are looked at now


def _look() -> None:
    now = {name: id(value) for name, value in _machinery().items()}
    for name, ident in _BEFORE.items():
        if now.get(name) != ident and name not in _tampered:
            _tampered.append(name)
    if _config:
        _look_at_plugins(_config[0].pluginmanager)


# Where a plugin or hook implementation may be defined without the host's word: pytest's
# own packages and the standard library (read-only, the sandbox's), this file, and the
# suite's configuration the contract holds protected (a conftest.py anywhere, the suite's
# own directory). Anything else is named in the record, with its file; the host accepts a
# file of the workdir that is a protected input (a plugin the project's configuration
# names) and refuses the rest (C028).
_SITE = os.path.dirname(os.path.dirname(os.path.abspath(str(__import__("_pytest").__file__))))
_STDLIB = os.path.dirname(os.path.abspath(str(os.__file__)))
_SELF = os.path.abspath(__file__)
_plugins: list[dict[str, str]] = []  # {"what": …, "file": …}: foreign plugins and hooks


def _defined_in(thing: object) -> str:
    """The file the code of a plugin or hook implementation comes from ("" unknown)."""
    if isinstance(thing, type(sys)):
        found = getattr(thing, "__file__", None) or ""
    else:
        code = getattr(thing, "__code__", None) or getattr(
            getattr(thing, "__func__", None), "__code__", None
        )
        if code is not None:
            found = code.co_filename
        else:  # an object: its class's module
            module = sys.modules.get(getattr(type(thing), "__module__", "") or "")
            found = getattr(module, "__file__", None) or ""
    return os.path.abspath(found) if found.startswith("/") else ""


def _trusted(where: str) -> bool:
    if not where:
        return False
    if where == _SELF or where.startswith((_SITE + "/", _STDLIB + "/")):
        return True
    if not where.startswith("/workdir/"):
        return False
    suite = _SUITE.rstrip("/")
    return (
        os.path.basename(where) == "conftest.py" or where == suite or where.startswith(suite + "/")
    )


def _note_plugin(what: str, where: str) -> None:
    entry = {"what": what, "file": where or "(unknown)"}
    if entry not in _plugins:
        _plugins.append(entry)


def _look_at_plugins(manager: Any) -> None:
    """Every registered plugin and every hook implementation, by where its code is."""
    for plugin in list(manager.get_plugins()):
        where = _defined_in(plugin)
        if not _trusted(where):
            _note_plugin(f"plugin {manager.get_name(plugin) or type(plugin).__qualname__}", where)
    for hook_name, caller in list(vars(manager.hook).items()):
        get = getattr(caller, "get_hookimpls", None)
        if get is None:
            continue
        for impl in get():
            where = _defined_in(impl.function)
            if not _trusted(where):
                _note_plugin(f"hook {hook_name} of plugin {impl.plugin_name}", where)


def pytest_configure(config: Any) -> None:
    _config[:] = [config]
    _BEFORE["pluginmanager._inner_hookexec"] = id(config.pluginmanager._inner_hookexec)


def pytest_deselected(items: list[Any]) -> None:
    _deselected.extend(item.nodeid for item in items)


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _errors.append(report.nodeid or "<collection>")
    elif report.skipped and report.nodeid:
        _skipped_files.append(report.nodeid.split("::", 1)[0])


def pytest_collection_finish(session: Any) -> None:
    _collected[:] = [item.nodeid for item in session.items]


_RANK = {"passed": 0, "skipped": 1, "xfailed": 2, "xpassed": 3, "failed": 4}


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "teardown":
        _look()
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    if report.when != "call" and outcome == "passed":
        return  # a setup or teardown that passed: the call decides
    seen = _outcomes.get(report.nodeid)
    if seen is None or _RANK[outcome] > _RANK[seen]:
        _outcomes[report.nodeid] = outcome
    if outcome == "failed" and report.nodeid not in _failures:
        crash = getattr(report.longrepr, "reprcrash", None)
        said = getattr(crash, "message", None) or str(report.longrepr)
        _failures[report.nodeid] = f"{report.when}: {said[:1000]}"


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _running[0] = nodeid


class _Unequal:
    """A fresh value of a private class: nothing honest compares equal to it."""

    __hash__ = object.__hash__


def pytest_assertion_pass(item: Any, lineno: int, orig: str, expl: str) -> None:
    """Implemented so that pytest (with `enable_assertion_pass_hook`) shows a passing
    comparison's operands to `pytest_assertrepr_compare` below, as it does a failing one's."""


def pytest_assertrepr_compare(config: Any, op: str, left: object, right: object) -> None:
    """A comparison that decided an assertion: an operand from the work (not the standard
    library, pytest or the suite's own files) that says it equals a value no honest object
    equals, or is not unequal to it, is recorded. Nothing is said to pytest."""
    if op not in ("==", "!="):
        return
    for value, other in ((left, right), (right, left)):
        if _from_the_work(value) and (
            _equals_anything(value, op) or _equals_any_of_its_kind(value, other, op)
        ):
            found = f"{_running[0]}: {type(value).__qualname__}"
            if found not in _always_equal:
                _always_equal.append(found)


def _equals_anything(value: object, op: str) -> bool:
    probe = _Unequal()
    try:
        if op == "==":
            return bool(value == probe) or bool(probe == value)
        # `!=` asks the value's own __ne__, which need not be the negation of its __eq__
        return not (value != probe) or not (probe != value)  # noqa: SIM202
    except Exception:
        return False  # it could not say: not the pattern looked for


def _others_of_its_kind(value: object) -> list[object]:
    """Values of a builtin value's own type that differ from it: an honest value equal to
    it is equal to none of them."""
    kind = type(value)
    if kind is int:
        return [value + 1, value - 1, value + 1 + secrets.randbits(40)]  # type: ignore[operator]
    if kind is float and value == value:  # not NaN
        return [value + 1.0 + abs(value), -value - 1.5]  # type: ignore[operator, arg-type]
    if kind in (str, bytes):
        extra = "\x00" if kind is str else b"\x00"
        return [value + extra, extra + value, extra]  # type: ignore[operator]
    if kind in (tuple, list):
        return [value + kind([_Unequal()]), kind()] if value else [kind([_Unequal()])]  # type: ignore[operator]
    if kind is dict:
        return [{**value, _Unequal(): 0}]  # type: ignore[dict-item]
    return []


def _equals_any_of_its_kind(value: object, other: object, op: str) -> bool:
    """A value from the work compared with a builtin value that equals (or is not unequal
    to, by `!=`) two different values of that builtin type — the one compared and another:
    equal to every int, every str, … (an `int` subclass whose `__eq__` says True to any
    int). An honest value equals one of them at most."""
    probes = _others_of_its_kind(other)
    if not probes:
        return False
    try:
        if op == "==":
            said = [bool(value == v) or bool(v == value) for v in (other, *probes)]
        else:
            said = [not (value != v) or not (v != value) for v in (other, *probes)]  # noqa: SIM202
    except Exception:
        return False
    return sum(said) >= 2


def _from_the_work(value: object) -> bool:
    module = getattr(type(value), "__module__", None) or ""
    top = module.partition(".")[0]
    if top in sys.stdlib_module_names or top in ("builtins", "_pytest", "pytest", "pluggy"):
        return False
    found = getattr(sys.modules.get(module), "__file__", None) or ""
    where = os.path.abspath(found)
    if not where.startswith("/workdir/"):
        return False
    return not (where == _SUITE or where.startswith(_SUITE.rstrip("/") + "/"))


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    _look()
    if not _TARGET:
        return
    record = {
        "collected": _collected, "deselected": _deselected, "errors": _errors,
        "tampered": _tampered, "outcomes": _outcomes, "exitstatus": int(exitstatus),
        "always_equal": _always_equal, "plugins": _plugins, "finished": True,
        "skipped_files": _skipped_files, "failures": _failures,
    }  # fmt: skip
    partial = _TARGET + ".partial"
    with open(partial, "w") as handle:
        json.dump(record, handle)
    os.replace(partial, _TARGET)
