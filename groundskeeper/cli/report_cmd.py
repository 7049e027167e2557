"""`groundskeeper report`: the review of a run as one HTML page, its JSON document, in-toto
attestations or OTLP JSON spans. The work is `groundskeeper.review`'s; this module reads the
arguments, writes the files, narrates and picks the exit code.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage, narrate
from groundskeeper.cli.params import trusted_key_option
from groundskeeper.errors import GroundskeeperError

FORMATS = ("html", "json", "intoto", "otlp-json")


def _write(target: Path, text: str) -> None:
    """Write atomically: a reader never sees half a report."""
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@click.command(name="report")
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="html",
    show_default=True,
    help="html: the page; json: the document it is rendered from; intoto: RUN.intoto.jsonl "
    "(DSSE envelopes of in-toto statements); otlp-json: OpenTelemetry spans.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write it; `-` for stdout. Default: report.html for html, RUN.intoto.jsonl "
    "for intoto (both in the current directory), stdout for json and otlp-json.",
)
@trusted_key_option(" when checking the ledger")
@click.option(
    "--witness",
    "witness_dir",
    metavar="DIR",
    type=click.Path(path_type=Path, file_okay=False),
    help="Consult the witness in DIR instead of $GROUNDSKEEPER_HOME/witness (never advanced).",
)
@click.option(
    "--prices",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A YAML or JSON file of prices per million tokens per model, for a cost estimate "
    "(e.g. `anthropic:claude-sonnet-4-5: {input_tokens: 3, output_tokens: 15}`).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"intact", "status", "first_broken_line", "findings", "format", "written"} '
    "on stdout (the report itself goes to a file).",
)
def report(
    path: Path,
    fmt: str,
    output: Path | None,
    key_files: tuple[Path, ...],
    witness_dir: Path | None,
    prices: Path | None,
    as_json: bool,
) -> None:
    """Review a run as a reviewer would: one self-contained page that re-verifies
    the ledger while it is written, and records other tools can check.

    PATH is a plan file, its directory or a _steps.jsonl (default: the current
    directory). Everything shown comes from the signed ledger, never from the
    plan's headlines; the plan is read only to say whether the record backs them.

    \b
    The page (no script, no network, opens by double-click, prints to PDF):
      - a banner computed by the same code as `ledger verify`: intact, or
        broken at line N with each finding, the checkpoint, the witness, the
        sha256 of the files as rendered and the command that re-verifies them;
      - the run: goal, plan, models, tokens, time waiting on models, and a cost
        only with --prices (an estimate: prices are not in the signed record);
      - the tasks, failures first: each attempt's claim beside what was checked;
      - the timeline: every line by run, task and attempt, anchored #seq-N.
    Text a worker wrote is shown inert: escaped, its invisible controls visible.

    \b
    Exports, only of a ledger that verifies:
      --format intoto      one DSSE envelope per check verdict (in-toto Test
                           Result), one for the run (Simple Verification), signed
                           with your key; RUN.intoto.key.json holds its public half
      --format otlp-json   spans with the GenAI semantic conventions, for a
                           collector's OTLP JSON file receiver

    \b
    Examples:
      groundskeeper report plans/pricing -o review.html
      groundskeeper report plans/pricing --format json | jq .integrity
      groundskeeper report plans/pricing --format intoto

    Exit status: 0 the ledger is intact, 1 it is not (the page is still written,
    saying so; exports are refused), 2 the ledger or an option cannot be used.
    """
    from groundskeeper.cli.ledger_cmd import trusted_or_exit
    from groundskeeper.review.document import build_document
    from groundskeeper.review.prices import read_prices
    from groundskeeper.review.snapshot import read_snapshot
    from groundskeeper.review.tasks import plan_headlines

    keys = trusted_or_exit(key_files)
    try:
        price_table = read_prices(prices) if prices is not None else None
        snapshot = read_snapshot(path, keys, witness_dir=witness_dir)
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    headlines = None
    if snapshot.plan_path is not None:
        try:
            headlines = plan_headlines(snapshot.plan_path, snapshot.lines)
        except GroundskeeperError as exc:
            narrate(f"groundskeeper: the plan cannot be read ({exc}); headlines not judged")
    command = ["groundskeeper", "ledger", "verify", str(snapshot.ledger_path)]
    for key_file in key_files:
        command += ["--key", str(key_file)]
    reverify = shlex.join(command)
    document = build_document(snapshot, headlines=headlines, prices=price_table, reverify=reverify)
    integrity = document["integrity"]
    intact: bool = integrity["intact"]
    target = _target(fmt, output, document)
    if as_json and target is None:
        fail_usage("--json prints a summary on stdout: give the report a file with -o FILE")
    written: list[str] = []
    if fmt in ("intoto", "otlp-json") and not intact:
        narrate(
            f"groundskeeper: the ledger does not verify ({len(integrity['findings'])} "
            f"finding(s)); nothing exported. See: {reverify}"
        )
    else:
        written = _emit(fmt, document, target)
    if as_json:
        emit_json(
            {
                "intact": intact,
                "status": integrity["status"],
                "first_broken_line": integrity["first_broken_line"],
                "findings": integrity["findings"],
                "format": fmt,
                "written": written,
            }
        )
    elif written and target is not None:
        state = "intact" if intact else _broken_words(integrity)
        narrate(f"groundskeeper: wrote {', '.join(written)} (ledger {state})")
    if not intact and fmt in ("html", "json"):
        narrate(f"groundskeeper: this ledger does NOT verify; see: {reverify}")
    sys.exit(EXIT_OK if intact else EXIT_FINDINGS)


def _broken_words(integrity: dict[str, Any]) -> str:
    line = integrity["first_broken_line"]
    return f"BROKEN at line {line}" if line is not None else "BROKEN"


def _target(fmt: str, output: Path | None, document: dict[str, Any]) -> Path | None:
    """The file to write, None for stdout."""
    if output is not None:
        return None if str(output) == "-" else output
    if fmt == "html":
        return Path("report.html")
    if fmt == "intoto":
        runs = document["runs"]
        return Path(f"{runs[-1]['run'] if runs else 'run'}.intoto.jsonl")
    return None


def _emit(fmt: str, document: dict[str, Any], target: Path | None) -> list[str]:
    if fmt == "html":
        from groundskeeper.review.page import render_page

        text = render_page(document)
    elif fmt == "json":
        text = json.dumps(document, ensure_ascii=False, indent=1) + "\n"
    elif fmt == "otlp-json":
        from groundskeeper.review.otlp import otlp_json

        text = otlp_json(document) + "\n"
    else:
        return _emit_intoto(document, target)
    if target is None:
        click.echo(text, nl=False)
        return ["-"]
    _write(target, text)
    return [str(target)]


def _emit_intoto(document: dict[str, Any], target: Path | None) -> list[str]:
    from groundskeeper.cli.ledger_cmd import load_run_key
    from groundskeeper.review.intoto import intoto_lines, public_key_json

    key = load_run_key()
    text = "".join(line + "\n" for line in intoto_lines(document, key))
    key_text = json.dumps(public_key_json(key), indent=1) + "\n"
    if target is None:
        click.echo(text, nl=False)
        return ["-"]
    key_path = target.with_name(target.name.removesuffix(".jsonl") + ".key.json")
    _write(target, text)
    _write(key_path, key_text)
    return [str(target), str(key_path)]
