"""A JSON schema split across files: the files its relative `$ref`s reach, read from the
schema's own directory inside the working directory. The `json-schema` contract builds its
`referencing` registry from them, and lint (T016) asks the same question of the same files,
so a plan lint passes is one whose references the contract can resolve. Nothing is fetched:
a reference with a scheme (`https:`, `file:`), one that leaves the working directory, or one
to an absent or hidden file is a named failure."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterator

#: where the registry files a schema read from the working directory; no retrieval follows it
BASE_URI = "https://workdir.groundskeeper.invalid/"

_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples"})  # data, never a subschema


class SchemaRefError(ValueError):
    """A reference the contract will not follow, and why."""


def _refs(schema: object) -> Iterator[str]:
    """Every `$ref` (and `$dynamicRef`) string in a schema, its data keywords aside."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield value
            elif key not in _NOT_SCHEMAS:
                yield from _refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _refs(item)


def referenced_path(schema_path: str, ref: str) -> str | None:
    """The workdir path a `$ref` in the file `schema_path` names (None: a reference inside
    the same document, `#…`). Raises SchemaRefError for one that is not a file beside it."""
    target = ref.split("#", 1)[0]
    if not target:
        return None
    if ":" in target.split("/", 1)[0] or target.startswith("/"):
        raise SchemaRefError(
            f"`{schema_path}` refers to `{ref}`, which is not fetched: a reference names a"
            " file relative to the schema's own folder"
        )
    path = posixpath.normpath(posixpath.join(posixpath.dirname(schema_path), target))
    if path == ".." or path.startswith("../") or path.startswith("/"):
        raise SchemaRefError(
            f"`{schema_path}` refers to `{ref}`, which is outside the working directory"
        )
    return path


def schema_files(
    schema_path: str,
    schema: object,
    read: Callable[[str], str | None],
    is_hidden: Callable[[str], bool],
) -> dict[str, object]:
    """Every other schema file `schema` (read from `schema_path`) reaches through relative
    `$ref`s, parsed: path → contents. `read(path)` gives a file's text (None: absent). A
    hidden file may be referred to only from a hidden schema (a visible one would carry it
    to the worker's side of the run). Raises SchemaRefError, naming the reference."""
    hidden_root = is_hidden(schema_path)
    found: dict[str, object] = {}
    todo = [(schema_path, schema)]
    while todo:
        where, contents = todo.pop()
        for ref in _refs(contents):
            path = referenced_path(where, ref)
            if path is None or path == schema_path or path in found:
                continue
            if is_hidden(path) and not hidden_root:
                raise SchemaRefError(
                    f"`{where}` refers to `{ref}`, which is hidden (`:hide:`): a schema the"
                    " worker sees cannot be built from one it does not"
                )
            text = read(path)
            if text is None:
                raise SchemaRefError(f"`{where}` refers to `{ref}`, but `{path}` does not exist")
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                raise SchemaRefError(
                    f"`{where}` refers to `{ref}`, but `{path}` is not JSON: {exc}"
                ) from None
            found[path] = parsed
            todo.append((path, parsed))
    return found
