"""`groundskeeper ledger verify|show` and `groundskeeper keygen`: the terminal side of the
signed step ledger. The format and the checks live in `groundskeeper.record.ledger`, key files in
`groundskeeper.record.keys`; this module reads arguments, prints and picks the exit code.
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
from pathlib import Path
from typing import Any

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage, narrate
from groundskeeper.cli.params import trusted_key_option
from groundskeeper.errors import UsageError
from groundskeeper.record.keys import (
    KeyFileError,
    PublicKey,
    SigningKey,
    create_signing_key,
    ensure_signing_key,
    trusted_keys,
)
from groundskeeper.record.ledger import (
    Finding,
    Report,
    Witness,
    advance_witness,
    read_steps,
    verify_ledger,
)
from groundskeeper.record.witness import WitnessEntry, WitnessError
from groundskeeper.review.timeline import inert, timeline_entries

MAX_HUMAN_FINDINGS = 50
_HEX_ROOT = re.compile(r"[0-9a-fA-F]{64}")


def load_run_key() -> SigningKey:
    """The signing key for a run, created on first use with a one-line notice on stderr."""
    try:
        loaded = ensure_signing_key()
    except KeyFileError as exc:
        fail_usage(str(exc))
    if loaded.created:
        narrate(
            f"groundskeeper: created signing key {loaded.private_path} "
            f"(key id {loaded.key.public.key_id[:16]}…; share {loaded.public_path.name} "
            "with whoever reviews your ledgers)"
        )
    return loaded.key


def trusted_or_exit(key_files: tuple[Path, ...]) -> list[PublicKey]:
    try:
        keys = trusted_keys(extra=key_files)
    except KeyFileError as exc:
        fail_usage(str(exc))
    if not keys:
        narrate(
            "groundskeeper: no trusted keys (no signing key of yours, nothing in trusted/, "
            "no --key): every signature will count as untrusted"
        )
    return keys


def _verify(
    path: Path, key_files: tuple[Path, ...], witness_dir: Path | None = None, **expect: Any
) -> tuple[Report, WitnessEntry | None]:
    """The report, checked against the witness, and the entry it advanced the witness to."""
    keys = trusted_or_exit(key_files)
    try:
        report = verify_ledger(path, keys, witness=Witness(witness_dir), **expect)
    except UsageError as exc:
        fail_usage(str(exc))
    try:
        advanced = advance_witness(report)
    except WitnessError as exc:
        narrate(f"groundskeeper: warning: {exc}; the witness was not advanced")
        advanced = None
    return report, advanced


def _witness_line(report: Report, advanced: WitnessEntry | None) -> str:
    check = report.witness
    assert check is not None  # the CLI always verifies with a witness
    now = f"; it now records {advanced.size} lines" if advanced is not None else ""
    if check.entry is not None:
        return (
            f"witness: consulted its entry for this ledger in {check.directory} "
            f"({check.entry.size} lines){now}"
        )
    if any(f.code == "witness-unreadable" for f in report.findings):
        return f"witness: its entry for this ledger in {check.directory} cannot be read"
    return (
        f"witness: no entry for this ledger in {check.directory} was consulted, so an older "
        f"copy of the ledger put back in its place would not be detected{now}"
    )


def _root_as_hex(value: str | None) -> str | None:
    """--expect-root takes the hex root of `verify --json` or the base64 of a checkpoint."""
    if value is None:
        return None
    if _HEX_ROOT.fullmatch(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error:
        raw = b""
    if len(raw) != 32:
        fail_usage(
            f"--expect-root {value!r} is neither 64 hex digits nor the base64 root of a "
            "checkpoint; copy head.root from `groundskeeper ledger verify --json`"
        )
    return raw.hex()


def _finding_line(finding: Finding, report: Report) -> str:
    if finding.line is None:
        where = report.path.with_suffix(".checkpoint").name
        if finding.code in ("empty", "expect-mismatch", "rollback", "fork", "witness-unreadable"):
            where = report.path.name
    else:
        where = f"{report.path.name}:{finding.line}"
    seq = f" seq {finding.seq}:" if finding.seq is not None else ""
    return f"{where}:{seq} {finding.code}: {finding.reason}"


@click.group(name="ledger")
def ledger() -> None:
    """Review a run's signed step ledger, offline.

    \b
    A plan directory holds _steps.jsonl (one signed, hash-chained line per step)
    and _steps.checkpoint (a signed head: number of lines and their Merkle root).
    The format is ledger/SPEC.md in the groundskeeper repository.

    \b
    Examples:
      groundskeeper ledger verify plans/pricing
      groundskeeper ledger show plans/pricing
    """


@ledger.command(name="verify")
@click.argument("path", default=".", type=click.Path(path_type=Path))
@trusted_key_option(" (OpenSSH, e.g. a colleague's signing_key.pub)")
@click.option(
    "--expect-size",
    type=click.IntRange(min=0),
    help="Number of lines the ledger must have (a head you kept elsewhere).",
)
@click.option(
    "--expect-root",
    help="Merkle root the ledger must have (hex, as printed by --json, or a checkpoint's base64).",
)
@click.option(
    "--witness",
    "witness_dir",
    metavar="DIR",
    type=click.Path(path_type=Path, file_okay=False),
    help="Consult and advance the witness in DIR instead of $GROUNDSKEEPER_HOME/witness "
    "(e.g. one kept where whoever runs the plan cannot write).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"ok", "lines", "runs", "head": {"size", "root"}, "findings": [{"line", '
    '"seq", "code", "reason"}], "witness": {"path", "consulted", "size", "root", '
    '"advanced"}} on stdout.',
)
def verify(
    path: Path,
    key_files: tuple[Path, ...],
    expect_size: int | None,
    expect_root: str | None,
    witness_dir: Path | None,
    as_json: bool,
) -> None:
    """Prove that no step in PATH's ledger was altered, removed, reordered, inserted,
    replayed or cut off, and that keys you trust signed it. Lines cut off together
    with the checkpoint (an older copy of both files put back) are caught by the
    witness, if it saw the ledger before.

    PATH is a plan directory or a _steps.jsonl (default: the current directory).
    Every finding is reported, not just the first.

    \b
    Trusted keys: your own (signing_key.pub in $GROUNDSKEEPER_HOME), every
    $GROUNDSKEEPER_HOME/trusted/*.pub, and each --key FILE. Nothing inside a
    ledger makes it trusted.

    \b
    Rollback: every run and every verify records the ledger's largest signed
    checkpoint in the witness, $GROUNDSKEEPER_HOME/witness (one file per ledger).
    With an entry there, verify reports `rollback` when the ledger holds fewer
    lines than the witness saw (lines cut off, the checkpoint with them or not)
    and `fork` when its first lines differ from those the witness saw. Without
    an entry (another machine, a fresh home) only the checkpoint speaks: it
    catches a dropped tail (`checkpoint-mismatch`), but not an older pair of
    _steps.jsonl and _steps.checkpoint put back together, nor a tail dropped
    and re-signed by whoever holds the signing key. The output says whether an
    entry was consulted. An older copy kept on purpose (an archive) is a
    rollback too; check it against an empty --witness DIR.

    \b
    The witness sits in $GROUNDSKEEPER_HOME beside the signing key; to catch
    a key holder too, keep a head (or a --witness DIR) elsewhere:
      groundskeeper ledger verify --json | jq .head        # after the run
      groundskeeper ledger verify --expect-size 42 --expect-root 3f…   # later

    \b
    Exit status: 0 clean, 1 at least one finding, 2 the ledger or a key file
    cannot be read.
    """
    report, advanced = _verify(
        path,
        key_files,
        witness_dir,
        expect_size=expect_size,
        expect_root=_root_as_hex(expect_root),
    )
    if as_json:
        document = report.to_json()
        document["witness"]["advanced"] = advanced is not None
        emit_json(document)
    else:
        for finding in report.findings[:MAX_HUMAN_FINDINGS]:
            click.echo(_finding_line(finding, report))
        hidden = len(report.findings) - MAX_HUMAN_FINDINGS
        if hidden > 0:
            click.echo(f"… and {hidden} more findings (--json lists them all)")
        click.echo(_witness_line(report, advanced))
        runs = f"{report.runs} run{'' if report.runs == 1 else 's'}"
        if report.ok:
            click.echo(
                f"ok: {report.path}: {report.lines} lines, {runs}, "
                f"head {report.head.size} {report.head.root}"
            )
        else:
            count = len(report.findings)
            click.echo(
                f"FAILED: {count} finding{'' if count == 1 else 's'} in {report.path} "
                f"({report.lines} lines, {runs})"
            )
    sys.exit(EXIT_OK if report.ok else EXIT_FINDINGS)


_VERDICT_COLOURS = {
    "PASS": "green",
    "DONE": "green",
    "ok": "green",
    "FAIL": "red",
    "FAILED": "red",
    "refused": "red",
    "failed": "red",
    "PARTIAL": "yellow",
    "tamper": "red",
    "allow": "green",
    "block": "red",
    "stop": "red",
}


@ledger.command(name="show")
@click.argument("path", default=".", type=click.Path(path_type=Path))
@trusted_key_option(" when checking the ledger")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"ok", "findings", "entries": [{"line", "seq", "ts", "step", "run", "task", '
    '"summary", "verdict"}]} on stdout.',
)
def show(path: Path, key_files: tuple[Path, ...], as_json: bool) -> None:
    """Print PATH's ledger as a timeline: sequence, time, step, task, summary.

    PATH is a plan directory or a _steps.jsonl (default: the current directory).
    The ledger is verified first; a timeline of a ledger that does not verify is
    shown with a warning on stderr and exit status 1 (details: `ledger verify`).

    \b
    Example:
      groundskeeper ledger show plans/pricing
         5  2025-03-14 09:27:00  check       gather-pricing  FAIL exit status 1 · …
    """
    report, _ = _verify(path, key_files)
    try:
        steps = read_steps(path)
    except UsageError as exc:
        fail_usage(str(exc))
    entries = timeline_entries(steps)
    if as_json:
        emit_json(
            {
                "ok": report.ok,
                "findings": [f.to_json() for f in report.findings],
                "entries": entries,
            }
        )
    else:
        run = None
        for entry in entries:
            if entry["run"] != run and entry["run"] is not None:
                run = entry["run"]
                click.echo(click.style(f"── run {_one_line(run)}", bold=True))
            when = _one_line(entry["ts"] or "").replace("T", " ").rstrip("Z")[:19]
            summary = _one_line(entry["summary"])
            verdict = entry["verdict"]
            if verdict in _VERDICT_COLOURS and summary:
                head, _, rest = summary.partition(verdict)
                summary = head + click.style(verdict, fg=_VERDICT_COLOURS[verdict], bold=True)
                summary += rest
            seq = entry["seq"] if entry["seq"] is not None else "?"
            click.echo(
                f"{seq:>5}  {when:19}  {_one_line(entry['step'] or '?'):<13}  "
                f"{_one_line(entry['task'] or ''):<16}  {summary}"
            )
    if not report.ok:
        findings = f"{len(report.findings)} finding{'' if len(report.findings) == 1 else 's'}"
        narrate(
            f"groundskeeper: this ledger does NOT verify ({findings}); "
            f"see: groundskeeper ledger verify {path}"
        )
    sys.exit(EXIT_OK if report.ok else EXIT_FINDINGS)


def _one_line(value: object) -> str:
    """A timeline field as one line of inert text: a worker chose some of them (a path, a
    claim), and a newline or a terminal escape in one must not print as a step of its own."""
    return inert(value).replace("\n", "<U+000A>").replace("\t", "<U+0009>")


@click.command(name="keygen")
@click.option("--force", is_flag=True, help="Replace an existing signing key.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"created", "private_key", "public_key", "key_id", "openssh"} on stdout.',
)
def keygen(force: bool, as_json: bool) -> None:
    """Create your ed25519 signing key in $GROUNDSKEEPER_HOME (default
    ~/.config/groundskeeper): signing_key.pem (mode 0600) and signing_key.pub.

    Runs create the key on first use anyway; keygen lets you make it up front
    and hand signing_key.pub to reviewers, who put it in their
    $GROUNDSKEEPER_HOME/trusted/ or pass it with `ledger verify --key`.

    An existing key is never overwritten without --force: ledgers signed with it
    would then verify only with its .pub kept in trusted/.
    """
    try:
        loaded = create_signing_key(force=force)
    except KeyFileError as exc:
        fail_usage(str(exc))
    public = loaded.key.public
    if as_json:
        emit_json(
            {
                "created": loaded.created,
                "private_key": str(loaded.private_path),
                "public_key": str(loaded.public_path),
                "key_id": public.key_id,
                "openssh": public.to_openssh(),
            }
        )
    else:
        click.echo(f"public key: {loaded.public_path}")
        click.echo(f"key id: {public.key_id}")
        narrate(f"private key: {loaded.private_path} (mode 0600; keep it to yourself)")
