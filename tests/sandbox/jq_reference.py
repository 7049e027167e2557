"""What jq should print, from the PyPI `jq` bindings (libjq), rendered as jq's CLI prints it.

The bindings hand back Python values; this module runs a jq command line's options around
them (-n -r -j -c -s -e -R -S -a --tab --indent --arg --argjson) and renders the values with
jq's layout and number format, so tests can compare the sandbox's bytes with libjq's meaning.
Other pipeline stages run in /bin/bash, as in reference.py.
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import jq

JQ_TREE: dict[str, str] = {
    "people.json": json.dumps(
        [
            {"name": "ann", "age": 31, "city": "oslo", "tags": ["a", "b"], "active": True},
            {"name": "bob", "age": 25, "city": "rome", "tags": [], "active": False},
            {"name": "cid", "age": 40, "city": "oslo", "tags": ["b"], "active": True},
            {"name": "dee", "age": 25, "city": "lima", "tags": ["c", "a"], "email": None},
        ],
        indent=1,
    ),
    "config.json": json.dumps(
        {
            "version": "1.2.3",
            "services": {
                "web": {"port": 8080, "replicas": 2, "env": {"DEBUG": "0", "MODE": "prod"}},
                "db": {"port": 5432, "replicas": 1, "env": {}},
            },
            "features": ["auth", "search"],
            "limits": None,
            "ratio": 0.75,
        }
    ),
    "report.json": json.dumps(
        {
            "tests": [
                {"name": "t_parse", "status": "pass", "duration": 0.5},
                {"name": "t_eval", "status": "fail", "duration": 1.25, "error": "boom"},
                {"name": "t_print", "status": "pass", "duration": 0.125},
                {"name": "t_io", "status": "skip", "duration": 0},
            ],
            "summary": {"passed": 2, "failed": 1, "skipped": 1},
        },
        indent=2,
    ),
    "stream.json": '1 2\n3\n{"a": 1, "b": [true, null]}\n"x"\nnull\n[1, [2, [3]]]\n',
    "events.ndjson": "".join(
        json.dumps(e) + "\n"
        for e in [
            {"level": "info", "msg": "start", "ts": 1},
            {"level": "warn", "msg": "slow disk", "ts": 5},
            {"level": "error", "msg": "failed: code=7", "ts": 9},
            {"level": "info", "msg": "stop", "ts": 12},
        ]
    ),
    "numbers.json": "[3, 1.5, -2, 10, 0.1, 1e-05, 100, 2.5, 123456789, 0.30000000000000004]",
    "strings.json": json.dumps(
        ["alpha", "Beta", "gamma delta", "", "x,y", "tab\there", "caf\u00e9", 'q"uote', "a\\b"]
    ),
    "lines.txt": "first line\nsecond,with,commas\n\n  padded  \nlast\n",
    "bad.json": '{"a": 1,}\n',
    "partial.json": '{"a": 1}\n{"a": \n',
    "empty.json": "",
    "nested.json": json.dumps({"a": {"b": {"c": [1, {"d": "deep"}]}}, "x": [[1, 2], [3, 4]]}),
}


def make_jq_tree(root: Path) -> Path:
    for rel, content in JQ_TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


# ---- jq's way of printing -------------------------------------------------------------------


def render_number(x: int | float) -> str:
    """jq 1.7's number text: shortest round-trip digits; exponent form when the point sits 4+
    places before the digits or 16+ after them."""
    if isinstance(x, int) and abs(x) < 10**17:
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "null"
    if math.isinf(x):
        x = math.copysign(1.7976931348623157e308, x)
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(x)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    decpt = len("".join(map(str, digit_tuple))) + exponent
    neg = "-" if sign else ""
    nd = len(digits)
    if decpt <= -4 or decpt > nd + 15:
        mant = digits[0] + ("." + digits[1:] if nd > 1 else "")
        e = decpt - 1
        return f"{neg}{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if decpt <= 0:
        return f"{neg}0.{'0' * -decpt}{digits}"
    if decpt >= nd:
        return neg + digits + "0" * (decpt - nd)
    return f"{neg}{digits[:decpt]}.{digits[decpt:]}"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b"}
_ESCAPES["\f"] = "\\f"


def render_string(s: str, ascii_only: bool = False) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        elif ascii_only and ord(ch) > 0x7F:
            cp = ord(ch)
            if cp >= 0x10000:
                cp -= 0x10000
                out.append(f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}")
            else:
                out.append(f"\\u{cp:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class Layout:
    indent: str = "  "  # "" compact
    sort_keys: bool = False
    ascii_only: bool = False


def render(value: Any, layout: Layout, level: int = 0) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return render_number(value)
    if isinstance(value, str):
        return render_string(value, layout.ascii_only)
    pretty = layout.indent != ""
    inner = "\n" + layout.indent * (level + 1) if pretty else ""
    outer = "\n" + layout.indent * level if pretty else ""
    if isinstance(value, list):
        if not value:
            return "[]"
        items = [inner + render(v, layout, level + 1) for v in value]
        return "[" + ",".join(items) + outer + "]"
    assert isinstance(value, dict)
    if not value:
        return "{}"
    keys = sorted(value) if layout.sort_keys else list(value)
    colon = ": " if pretty else ":"
    pairs = [
        inner + render_string(k, layout.ascii_only) + colon + render(value[k], layout, level + 1)
        for k in keys
    ]
    return "{" + ",".join(pairs) + outer + "}"


# ---- one jq invocation ----------------------------------------------------------------------


@dataclass
class Invocation:
    program: str = "."
    files: list[str] = field(default_factory=list)
    null_input: bool = False
    raw: bool = False
    join: bool = False
    slurp: bool = False
    exit_status: bool = False
    raw_input: bool = False
    layout: Layout = Layout()
    args: dict[str, Any] = field(default_factory=dict)


def parse_invocation(argv: list[str]) -> Invocation:
    """jq's options as cmd_jq.c reads them (the subset the battery uses)."""
    inv = Invocation()
    indent, sort_keys, ascii_only, compact = "  ", False, False, False
    program: str | None = None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if a in ("--arg", "--argjson"):
                name, val = argv[i + 1], argv[i + 2]
                inv.args[name] = val if a == "--arg" else json.loads(val)
                i += 3
                continue
            if a == "--indent":
                indent = " " * int(argv[i + 1])
                i += 2
                continue
            if a == "--tab":
                indent = "\t"
            elif a == "--slurp":
                inv.slurp = True
            elif a == "--raw-output":
                inv.raw = True
            else:
                raise ValueError(f"option {a} not known to the reference")
        elif a.startswith("-") and len(a) > 1:
            for f in a[1:]:
                if f == "n":
                    inv.null_input = True
                elif f == "r":
                    inv.raw = True
                elif f == "j":
                    inv.raw = inv.join = True
                elif f == "c":
                    compact = True
                elif f == "s":
                    inv.slurp = True
                elif f == "e":
                    inv.exit_status = True
                elif f == "R":
                    inv.raw_input = True
                elif f == "S":
                    sort_keys = True
                elif f == "a":
                    ascii_only = True
                else:
                    raise ValueError(f"option -{f} not known to the reference")
        elif program is None:
            program = a
        else:
            inv.files.append(a)
        i += 1
    inv.program = program if program is not None else "."
    inv.layout = Layout("" if compact else indent, sort_keys, ascii_only)
    return inv


def _json_texts(text: str) -> tuple[list[Any], bool]:
    """The JSON texts in text, and whether it ended in a parse error."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos == len(text):
            return values, False
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return values, True
        values.append(value)


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: str


def run_reference(inv: Invocation, stdin: str, workdir: Path) -> Outcome:
    texts = [(workdir / f).read_text() for f in inv.files] if inv.files else [stdin]
    parse_failed = False
    inputs: list[Any] = []
    if inv.raw_input:
        whole = "".join(texts)
        inputs = [whole] if inv.slurp else whole.splitlines()
    else:
        for text in texts:
            values, failed = _json_texts(text)
            inputs.extend(values)
            if failed:
                parse_failed = True
                break
        if inv.slurp:
            inputs = [] if parse_failed else [inputs]
    if inv.null_input:
        inputs = [None]
    program = jq.compile(inv.program, args=inv.args)
    out: list[str] = []
    outputs: list[Any] = []
    status = 0
    for value in inputs:
        try:
            for result in program.input_value(value):
                outputs.append(result)
                if inv.raw and isinstance(result, str):
                    out.append(result)
                else:
                    out.append(render(result, inv.layout))
                if not inv.join:
                    out.append("\n")
        except ValueError:
            status = 5
    if parse_failed:
        status = 2
    elif status == 0 and inv.exit_status:
        if not outputs:
            status = 4
        elif outputs[-1] is None or outputs[-1] is False:
            status = 1
    return Outcome(status, "".join(out))


# ---- command lines with jq in them ------------------------------------------------------------


def split_pipeline(cmdline: str) -> list[str]:
    """The stages of a simple pipeline: `|` outside quotes."""
    stages, current, quote = [], [], ""
    for ch in cmdline:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == "|":
            stages.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    stages.append("".join(current).strip())
    return stages


def _bash(cmdline: str, workdir: Path, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", "-c", cmdline],
        cwd=workdir,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": str(workdir)},
    )


def expected(cmdline: str, workdir: Path) -> Outcome:
    """What the command line gives with libjq for its one jq stage and bash for the rest."""
    stages = split_pipeline(cmdline)
    at = next(i for i, s in enumerate(stages) if s.startswith("jq ") or s == "jq")
    stdin = _bash(" | ".join(stages[:at]), workdir, "").stdout if at else ""
    ours = run_reference(parse_invocation(shlex.split(stages[at])), stdin, workdir)
    if at == len(stages) - 1:
        return ours
    rest = _bash(" | ".join(stages[at + 1 :]), workdir, ours.stdout)
    return Outcome(rest.returncode, rest.stdout)
