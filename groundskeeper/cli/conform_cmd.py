"""`groundskeeper conform`, `groundskeeper dock` and `groundskeeper engine run`: rung 3 at the
terminal. The checks live in `conformance.rules`, the runtime in `conformance.engine`;
this module parses options, records and seals each dock (telemetry, ledger) and prints.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage, narrate
from groundskeeper.cli.params import Seconds
from groundskeeper.diagnostics import Diagnostic, has_errors
from groundskeeper.errors import GroundskeeperError

if TYPE_CHECKING:
    from groundskeeper.conformance.rules import DockResult
    from groundskeeper.record.ledger import AppendedLine, Ledger
    from groundskeeper.record.telemetry import Telemetry

DEFAULT_COMPONENT_DIR = "components"


def _print_diagnostics(diagnostics: list[Diagnostic], filename: str, *, err: bool) -> None:
    for diagnostic in diagnostics:
        click.echo(diagnostic.format(filename), err=err)


def _interface_lines(interface: dict[str, Any]) -> list[str]:
    lines = [f"  import {i['name']}: {i['type']}" for i in interface["imports"]]
    lines += [f"  export {e['name']}: {e['type']}" for e in interface["exports"]]
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


@click.command("conform")
@click.argument(
    "components",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
    metavar="COMPONENT.wasm | --upgrade OLD.wasm NEW.wasm",
)
@click.option(
    "--upgrade",
    is_flag=True,
    help="Take two files, OLD NEW: may NEW replace OLD? (NEW must conform too.)",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def conform(components: tuple[Path, ...], upgrade: bool, as_json: bool) -> None:
    """Rung 3: does COMPONENT.wasm fit the groundskeeper:engine world?

    \b
    The world (groundskeeper/wit/engine.wit):
      import session-info: func() -> string
      import vfs-query: func(query: string) -> string
      import run-command: func(cmdline: string) -> string
      export run: func(input: string) -> string
    Any `wasi:*` import is also allowed. Types are compared structurally
    (parameter names do not matter). A .wat text file is accepted too.

    \b
    With --upgrade OLD.wasm NEW.wasm: exports may grow but never shrink or
    change type; imports may shrink but never grow or change type.

    \b
    --json prints {"ok", "diagnostics", "imports", "exports"} (for --upgrade,
    the interface is NEW's). Exit 0 conforms, 1 does not, 2 unreadable file.

    \b
    Examples:
      groundskeeper conform build/tool.wasm
      groundskeeper conform --upgrade components/tool.wasm build/tool.wasm --json
    """
    from groundskeeper.conformance.rules import (
        ComponentUnreadable,
        check_interface,
        check_upgrade,
        inspect_component,
    )

    if upgrade and len(components) != 2:
        fail_usage("conform --upgrade takes two files: OLD.wasm NEW.wasm")
    if not upgrade and len(components) != 1:
        fail_usage("conform takes one component (or use --upgrade OLD.wasm NEW.wasm)")
    target = components[-1]
    try:
        _component, interface, diagnostics = inspect_component(target)
        if upgrade:
            upgrade_findings = check_upgrade(components[0], target)
            if diagnostics:  # NEW is not a component: say so once
                upgrade_findings = [d for d in upgrade_findings if d.code != "C001"]
            diagnostics = diagnostics + upgrade_findings
        if not any(d.code == "C001" for d in diagnostics):
            diagnostics = check_interface(interface) + diagnostics
    except ComponentUnreadable as exc:
        fail_usage(str(exc))

    ok = not has_errors(diagnostics)
    if as_json:
        document = {"ok": ok, "diagnostics": [d.to_json() for d in diagnostics]}
        document.update(interface.to_json())
        emit_json(document)
    else:
        _print_diagnostics(diagnostics, target.name, err=False)
        if ok:
            what = f"may replace {components[0].name} and " if upgrade else ""
            click.echo(f"{target.name} {what}conforms to groundskeeper:engine@0.1.0")
            for line in _interface_lines(interface.to_json()):
                click.echo(line)
        else:
            narrate(f"{target.name}: refused ({_plural(len(diagnostics), 'problem')})")
    raise SystemExit(EXIT_OK if ok else EXIT_FINDINGS)


@click.command("dock")
@click.argument("component", type=click.Path(path_type=Path))
@click.option(
    "--into",
    type=click.Path(path_type=Path, file_okay=False),
    help="Component directory [default: the plan's registry in its control directory with"
    " --plan, else ./components].",
)
@click.option(
    "--plan",
    "plan",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The plan whose dock registry, telemetry and ledger to use (its control directory,"
    " .groundskeeper/<plan>/); a docked file that is not the sealed one is refused.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def dock(component: Path, into: Path | None, plan: Path | None, as_json: bool) -> None:
    """Dock COMPONENT.wasm: copy it into the engine's component directory, if it may.

    It is copied only if it conforms to groundskeeper:engine and, when a component
    of the same file name is already docked, only if it is an allowed upgrade of it
    (see `groundskeeper conform --upgrade`). The copy is atomic; a refused component
    is never copied.

    \b
    Every dock and every refusal is recorded in _telemetry.db and sealed in the
    signed ledger _steps.jsonl, both in the plan's control directory (or beside the
    component directory), as a short run of its own: run-start, dock (name, SHA-256,
    interface, verdict, diagnostics), run-end. Fail-closed: if the ledger cannot
    be written (damaged, unwritable) nothing is docked, and a dock whose step
    cannot be sealed is undone. Review it with `groundskeeper ledger show`.

    \b
    --json prints {"ok", "component", "destination", "sha256", "replaced",
    "diagnostics", "imports", "exports", "ledger": {"path", "run_id", "seq",
    "head": {"size", "root"}}}. Exit 0 docked, 1 refused, 2 unusable input or
    a ledger that cannot be written.

    \b
    Examples:
      groundskeeper dock build/tool.wasm --plan plan.org
      groundskeeper dock build/tool.wasm --into /srv/engine/components --json
    """
    from groundskeeper.conformance.rules import dock as dock_component

    if not component.is_file():
        what = "is a directory" if component.is_dir() else "no such file"
        fail_usage(f"{component}: {what}; pass the component's .wasm file")
    if plan is not None and not plan.is_file():
        fail_usage(f"{plan}: no such plan file; pass the plan's .org file or drop --plan")
    baseline: dict[str, str] | None = None
    if plan is not None:
        from groundskeeper.record.control import ControlDir, RunLock

        try:
            control = ControlDir.for_plan(plan).ensure()
            # one writer per ledger (ledger/SPEC.md §9): the dock run's three lines must not
            # land inside a running `resume`'s run, so the dock holds the plan as `check
            # --write` does — refused at once (exit 2, the holder named) while a run has it
            lock = RunLock(control).acquire()
            click.get_current_context().call_on_close(lock.release)
        except GroundskeeperError as exc:
            fail_usage(str(exc))
        state_dir = control.path
        if into is None:
            into = control.components
    else:
        into = into if into is not None else Path.cwd() / DEFAULT_COMPONENT_DIR
        state_dir = into.parent
    telemetry = _open_telemetry(state_dir / "_telemetry.db")
    seal = _open_dock_run(state_dir, component, into, plan, telemetry)
    if plan is not None and into == control.components:
        from groundskeeper.record.backing import read_record

        baseline = read_record(seal.ledger.history()).docks  # the plan's sealed docks

    previous = _docked_bytes(into / component.name)
    result = dock_component(component, into, sealed=baseline)
    sealed, diagnostics = seal.dock(result, previous)
    with telemetry:
        telemetry.record_dock(
            run_id=seal.ledger.run_id,
            task_id=None,
            component=str(component),
            sha256=result.sha256 or None,
            ok=result.ok and sealed is not None,
            diagnostics=diagnostics,
        )
    if sealed is None:
        fail_usage(diagnostics[-1].message)
    ended = seal.end(result.ok)

    if as_json:
        emit_json({**result.to_json(), "ledger": seal.to_json(sealed, ended or sealed)})
    elif result.ok:
        upgraded = f" (replacing {result.replaced[:12]})" if result.replaced else ""
        click.echo(f"docked {component.name} → {result.destination}{upgraded}")
        click.echo(f"  sha256 {result.sha256}")
        for line in _interface_lines(result.interface):
            click.echo(line)
    else:
        _print_diagnostics(result.diagnostics, component.name, err=False)
        narrate(
            f"{component.name}: refused, not docked ({_plural(len(result.diagnostics), 'problem')})"
        )
    if not as_json:
        verdict = "dock" if result.ok else "refusal"
        narrate(f"sealed the {verdict} in {seal.ledger.path} (run {seal.ledger.run_id})")
    raise SystemExit(EXIT_OK if result.ok else EXIT_FINDINGS)


def _open_telemetry(path: Path) -> Telemetry:
    """Open telemetry before docking: a dock that cannot be recorded must not happen."""
    from groundskeeper.record.telemetry import Telemetry

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return Telemetry(path)
    except Exception as exc:  # sqlite3/OS errors opening the database: refuse to dock
        fail_usage(f"cannot open telemetry database {path}: {exc}; nothing was docked")


def _open_dock_run(
    state_dir: Path, component: Path, into: Path, plan: Path | None, telemetry: Telemetry
) -> _DockSeal:
    """Seal the dock run's start before docking: a dock that cannot be sealed must not
    happen, and appending run-start is what proves the ledger can take another line."""
    from groundskeeper import __version__
    from groundskeeper.cli.ledger_cmd import load_run_key
    from groundskeeper.record.ledger import Ledger

    key = load_run_key()
    run_id = f"dock-{uuid.uuid4().hex[:12]}"
    body = {
        "run_id": run_id,
        "kind": "dock",
        "component": str(component),
        "into": str(into),
        "plan": str(plan) if plan is not None else None,
        "versions": {"groundskeeper": __version__, "python": platform.python_version()},
    }
    try:
        ledger = Ledger(state_dir, key, run_id)
        ledger.record("run-start", body)
    except GroundskeeperError as exc:
        telemetry.close()
        fail_usage(f"cannot seal the dock in the ledger: {exc}; nothing was docked")
    return _DockSeal(ledger)


def _docked_bytes(destination: Path) -> bytes | None:
    """What is docked under this name now, kept to put back if the dock cannot be sealed."""
    try:
        return destination.read_bytes()
    except OSError:  # nothing docked yet, or unreadable (then dock refuses and copies nothing)
        return None


class _DockSeal:
    """The ledger side of one `groundskeeper dock`: the dock step and run-end of its run."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def dock(
        self, result: DockResult, previous: bytes | None
    ) -> tuple[AppendedLine | None, list[Diagnostic]]:
        """Seal the dock step (same body as the runner's); (None, why) when it cannot be
        sealed, after undoing an accepted dock so that no unsealed component stays docked."""
        body = {
            "run_id": self.ledger.run_id,
            "task_id": None,
            "component": str(result.component),
            "sha256": result.sha256,
            "ok": result.ok,
            "interface": result.interface,
            "diagnostics": [d.to_json() for d in result.diagnostics],
            "destination": str(result.destination) if result.destination else None,
            "replaced": result.replaced,
        }
        try:
            return self.ledger.record("dock", body), list(result.diagnostics)
        except GroundskeeperError as exc:
            undone = _undock(result, previous) if result.ok else "nothing was docked"
            message = f"the dock step could not be sealed in the ledger: {exc}; {undone}"
            return None, [*result.diagnostics, Diagnostic("error", "ledger", message, None, "R004")]

    def end(self, ok: bool) -> AppendedLine | None:
        """Seal run-end. The dock step is already sealed, so a failure here only warns: a
        run without run-end reads as cut short, which SPEC §5 allows."""
        body = {"run_id": self.ledger.run_id, "ok": ok, "states": [], "tampers": 0}
        try:
            return self.ledger.record("run-end", body)
        except GroundskeeperError as exc:
            narrate(f"groundskeeper: warning: the dock run's run-end was not sealed: {exc}")
            return None

    def to_json(self, dock_line: AppendedLine, last_line: AppendedLine) -> dict[str, Any]:
        """Where the dock step is, and the head to keep for `ledger verify --expect-*`."""
        return {
            "path": str(self.ledger.path),
            "run_id": self.ledger.run_id,
            "seq": dock_line.seq,
            "head": last_line.head.to_json(),
        }


def _undock(result: DockResult, previous: bytes | None) -> str:
    """Undo an accepted dock: put the component it replaced back, or remove it. Under the
    component directory's dock lock, and only if our copy is still the one docked."""
    from groundskeeper.conformance.rules import LOCK_NAME

    destination = result.destination
    if destination is None or result.replaced == result.sha256:
        return "the same component was already docked; nothing changed"
    try:
        with open(destination.parent / LOCK_NAME, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            if hashlib.sha256(destination.read_bytes()).hexdigest() != result.sha256:
                return f"{destination} was replaced meanwhile; check it by hand"
            if result.replaced is None:
                destination.unlink()
                return f"the dock was undone ({destination} removed)"
            if previous is None or hashlib.sha256(previous).hexdigest() != result.replaced:
                return f"the component it replaced changed meanwhile; check {destination} by hand"
            spare = destination.with_name(f".{destination.name}.undock")
            with open(spare, "wb") as out:
                out.write(previous)
                out.flush()
                os.fsync(out.fileno())
            os.replace(spare, destination)
            return f"the dock was undone (the previous {destination.name} is back)"
    except OSError as exc:
        return f"undoing the dock failed ({exc.strerror or exc}): remove {destination} by hand"


@click.group("engine")
def engine() -> None:
    """Run docked (or any conforming) components of the groundskeeper:engine world."""


@engine.command("run")
@click.argument("component", type=click.Path(path_type=Path))
@click.option("--input", "input_text", default="", help="The string passed to run(input).")
@click.option(
    "--workdir",
    type=click.Path(path_type=Path, file_okay=False),
    help="What run-command sees, read-only [default: the plan's directory, else .].",
)
@click.option(
    "--plan",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The plan vfs-query answers about (without it, vfs-query answers an error).",
)
@click.option("--run-id", default=None, help="The run id session-info reports [default: new].")
@click.option(
    "--deadline",
    type=Seconds(minimum=0.01),
    default=10.0,
    show_default=True,
    help="Seconds of wall-clock time run() may take.",
)
@click.option(
    "--fuel",
    type=click.IntRange(min=1),
    default=None,
    help="Units of work run() may do [default: 4e9 × deadline].",
)
@click.option(
    "--memory",
    type=click.IntRange(min=65536),
    default=256 * 1024 * 1024,
    show_default=True,
    help="Bytes of linear memory per memory.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def engine_run(
    component: Path,
    input_text: str,
    workdir: Path | None,
    plan: Path | None,
    run_id: str | None,
    deadline: float,
    fuel: int | None,
    memory: int,
    as_json: bool,
) -> None:
    """Instantiate COMPONENT, call run(--input) and print its answer.

    The component must conform (see `groundskeeper conform`); one that does not is
    refused before it is instantiated. Its Dock imports are answered by the host:

    \b
      session-info   JSON {"world", "run_id", "plan", "workdir"}
      vfs-query      JSON answer to a query over the plan's tasks, e.g.
                     `state=DONE`, `title~pricing`, `state!=DONE & title~"e2b"`,
                     `*` for all; fields state, title, id, line; ops = != ~
      run-command    stdout of a command line in the WASM sandbox shell, with
                     the workdir read-only; `error: run-command: …` on failure

    Limits: wall-clock --deadline, --fuel and --memory, and 8 MiB of output.

    \b
    --json prints {"ok", "output", "diagnostics", "fuel_consumed", "duration_ms",
    "instantiated"}. Exit 0 ok, 1 refused or failed, 2 unusable input.

    \b
    Example:
      groundskeeper engine run components/tool.wasm --plan plan.org --input hello
    """
    from groundskeeper.conformance.engine import EngineLimits, Session, SessionHost, run_component
    from groundskeeper.conformance.rules import ComponentUnreadable

    if not component.is_file():
        what = "is a directory" if component.is_dir() else "no such file"
        fail_usage(f"{component}: {what}; pass a component .wasm file")
    if plan is not None and not plan.is_file():
        fail_usage(f"{plan}: no such plan file; pass the plan's .org file or drop --plan")
    if workdir is None:
        workdir = plan.parent if plan is not None else Path.cwd()
    if not workdir.is_dir():
        fail_usage(f"{workdir}: no such directory; --workdir takes a directory")

    session = Session(
        run_id=run_id or uuid.uuid4().hex,
        workdir=workdir.resolve(),
        plan=plan.resolve() if plan is not None else None,
    )
    limits = EngineLimits(deadline=deadline, memory=memory, fuel=fuel)
    try:
        result = run_component(component, input_text, SessionHost(session), limits)
    except ComponentUnreadable as exc:
        fail_usage(str(exc))

    if as_json:
        emit_json(result.to_json())
    elif result.ok and result.output is not None:
        click.echo(result.output, nl=not result.output.endswith("\n"))
    else:
        _print_diagnostics(result.diagnostics, component.name, err=True)
        narrate(f"{component.name}: did not run to completion")
    raise SystemExit(EXIT_OK if result.ok else EXIT_FINDINGS)
