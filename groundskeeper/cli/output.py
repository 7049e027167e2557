"""Terminal output shared by the commands: JSON on stdout, narration on stderr, exit codes.

Exit codes: 0 ok, 1 findings or failures, 2 usage or unreadable input, 3 a run that waits for
an approval (the plan's, or a task's gate) with nothing FAILED.
"""

from __future__ import annotations

import json
import sys
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NoReturn

import click

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_WAITING = 3


def emit_json(document: Any) -> None:
    """Write one JSON document to stdout."""
    click.echo(dumps_indented(document))


def dumps_indented(document: Any) -> str:
    """`json.dumps(document, ensure_ascii=False, indent=2)`, the same text, faster: the
    standard library encodes an indented document in pure Python, one generator per value,
    and a long plan's report holds tens of thousands of values. Here a list or object of
    plain values (the bulk: a task's row, a diagnostic) is encoded by json's C encoder in one
    call, its separator carrying the line break and indentation of its depth."""
    if c_make_encoder is None:  # a Python without json's C speedups
        return json.dumps(document, ensure_ascii=False, indent=2)
    parts: list[str] = []
    _indented(document, 0, parts)
    return "".join(parts)


_PLAIN = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = (dict, list, tuple)


def _flat(items: Any) -> bool:
    """Whether every one of `items` is a plain value or an empty list or object (written
    alike however deep they are)."""
    kinds = set(map(type, items))
    if kinds <= _PLAIN:
        return True
    return not any(item and isinstance(item, _CONTAINERS) for item in items)


def _indented(value: Any, depth: int, parts: list[str]) -> None:
    """`value` appended to `parts` as `json.dumps(..., indent=2)` writes it at `depth`."""
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        parts.append(_encoder(depth)(value))
        return
    if not items:
        parts.append("{}" if isinstance(value, dict) else "[]")
    elif _flat(items):
        # flat: the C encoder's own text, its brackets moved onto lines of their own
        text = _encoder(depth + 1)(value)
        inner = "\n" + "  " * (depth + 1)
        parts.append(text[0] + inner + text[1:-1] + "\n" + "  " * depth + text[-1])
    elif isinstance(value, dict):
        inner = ",\n" + "  " * (depth + 1)
        for n, (key, item) in enumerate(value.items()):
            parts.append("{" + inner[1:] if n == 0 else inner)
            parts.append(encode_basestring(key) if isinstance(key, str) else _key(key))
            parts.append(": ")
            _indented(item, depth + 1, parts)
        parts.append("\n" + "  " * depth + "}")
    else:
        inner = ",\n" + "  " * (depth + 1)
        for n, item in enumerate(items):
            parts.append("[" + inner[1:] if n == 0 else inner)
            _indented(item, depth + 1, parts)
        parts.append("\n" + "  " * depth + "]")


def _key(key: Any) -> str:
    """A key that is not a string (a number, true, false, null) as json writes it."""
    text: str = _encoder(0)({key: 0})
    return text[1:-4]


_ENCODERS: dict[int, Any] = {}


def _encoder(depth: int) -> Any:
    """json's C encoder whose item separator ends a line and indents the next at `depth`:
    the text of one value (made once per depth, and used again: it keeps no state)."""
    found = _ENCODERS.get(depth)
    if found is None:
        encode = c_make_encoder(
            None, _no_default, encode_basestring, None, ": ", ",\n" + "  " * depth,
            False, False, True,
        )  # fmt: skip

        def found(value: Any, _encode: Any = encode) -> str:
            return "".join(_encode(value, 0))

        _ENCODERS[depth] = found
    return found


def _no_default(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def narrate(message: str) -> None:
    """Progress and commentary: stderr, so stdout stays the answer."""
    click.echo(message, err=True)


def fail_usage(message: str) -> NoReturn:
    """Bad input: a clear message on stderr, exit 2, never a traceback."""
    click.echo(f"groundskeeper: error: {message}", err=True)
    sys.exit(EXIT_USAGE)
