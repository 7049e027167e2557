"""What the sealed record shows of one attempt: its tool calls' bodies as sealed, the outputs
`sh` printed (kept by content hash in the plan's control directory), which watched paths each
call changed, and which commands ran and how they exited.

It owns the output store, the state of the watched paths (a `changed` contract's) taken around
each `sh` call, and the rule
for when a command line counts as "this command ran" (a single command, or a chain of them
joined by `&&`). It does not judge contracts or evidence (`contracts`, `evidence`) and does not
seal anything (`sealing`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from groundskeeper.acceptance.check import sha256_text
from groundskeeper.record.ledger_format import unsealed_name

#: A command text longer than this is sealed by hash only (its text is in the output store).
CMD_INLINE = 2000
#: A changed-path list longer than this (as JSON) is not sealed: "unknown", which fails closed.
CHANGED_INLINE_BYTES = 16 * 1024
#: The most of one stored output read back (a sandbox run's output is capped below this).
OUTPUT_READ_LIMIT = 8 * 1024 * 1024
OUTPUTS_DIR = "outputs"


# -- the output store ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutputStore:
    """Texts by their SHA-256, one file each, in the control directory (hidden from workers).

    The ledger seals only the hash; reading back re-hashes, so a store file changed by anyone
    reads as absent rather than as what it now says."""

    root: Path

    def put(self, text: str) -> str:
        digest = sha256_text(text, keep_surrogates=True)
        path = self.root / digest
        if not path.exists():
            import tempfile

            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(text.encode("utf-8", errors="surrogatepass"))
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        return digest

    def get(self, digest: str) -> str | None:
        """The text with this hash, or None when it is not stored (or no longer matches)."""
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            return None
        try:
            fd = os.open(self.root / digest, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            data = read_at_most(handle, OUTPUT_READ_LIMIT)
        if len(data) > OUTPUT_READ_LIMIT or hashlib.sha256(data).hexdigest() != digest:
            return None
        return data.decode("utf-8", errors="surrogatepass")


# -- the watched paths around an `sh` call ---------------------------------------------------


def watch_state(root: Path, paths: Sequence[str]) -> dict[str, str | None]:
    """What each watched path (relative to `root`) holds: a regular file's SHA-256, `link:` and
    its target for a symlink, `other` for anything else, None when absent. Links are never
    followed, and anything past `WATCH_READ_LIMIT` bytes is `large:` with its size and mtime."""
    return {p: _content(root, p) for p in paths}


#: The most files an `sh` call's sealed `read` names; past it what it read is unknown (None).
READ_SEALED_MAX = 64
#: The most bytes of names and hashes an `sh` call's sealed `read` holds (past it: None).
READ_SEALED_BYTES = 16 * 1024


def input_digests(root: Path | str, paths: Iterable[str]) -> dict[str, str | None]:
    """What each workdir file (relative) holds, as `watch_state` tells it: how an `sh`
    call's `read` is sealed right after it, and how evidence compares it at the verdict
    (`acceptance.evidence`: a quote from a run whose input changed afterwards is stale)."""
    return {p: _content(Path(root), p) for p in paths}


#: The most of a watched file hashed around each call; a larger one is judged by size and mtime.
WATCH_READ_LIMIT = 4 * 1024 * 1024


def _content(root: Path, relative: str) -> str | None:
    path = root / relative
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            return "link:" + os.readlink(path)
        except OSError:
            return "link:?"
    if not stat.S_ISREG(info.st_mode):
        return "other"
    if info.st_size > WATCH_READ_LIMIT:
        return f"large:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "other"
    with os.fdopen(fd, "rb") as handle:
        return hashlib.sha256(read_at_most(handle, WATCH_READ_LIMIT)).hexdigest()


def read_at_most(handle: BinaryIO, limit: int) -> bytes:
    """Up to `limit + 1` bytes, in chunks: one `read(limit + 1)` would allocate the whole
    limit up front (4 MiB for a 10-byte file), which made each small read cost ~0.3 ms."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = handle.read(min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


#: The most files an attempt's stamps list; past it, every file is taken as written.
MAX_STAMPED_FILES = 50_000

Stamp = tuple[int, int, int]  # (size, mtime ns, inode)


def workdir_stamps(root: Path, skip: Iterable[Path]) -> dict[str, Stamp] | None:
    """Every regular file under `root` (relative, POSIX) with its size, mtime and inode, the
    `skip` paths (the plan, the control directory) left out and links never followed: taken
    around an attempt, what changed between two is what the attempt wrote by any tool. None
    when there are more files than `MAX_STAMPED_FILES` (then nothing can be told apart)."""
    skipped = {os.path.realpath(p) for p in skip}
    found: dict[str, Stamp] = {}
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(top, d)) not in skipped]
        for name in names:
            path = os.path.join(top, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or os.path.realpath(path) in skipped:
                continue
            relative = PurePosixPath(Path(path).relative_to(root)).as_posix()
            found[relative] = (info.st_size, info.st_mtime_ns, info.st_ino)
            if len(found) > MAX_STAMPED_FILES:
                return None
    return found


def stamps_changed(
    before: Mapping[str, Stamp] | None, after: Mapping[str, Stamp] | None
) -> tuple[str, ...] | None:
    """The files created or changed between two stamps, sorted (a removed file is not
    content anyone can read); None when either could not be taken."""
    if before is None or after is None:
        return None
    return tuple(sorted(p for p, s in after.items() if before.get(p) != s))


def changed_between(
    before: Mapping[str, str | None] | None, after: Mapping[str, str | None] | None
) -> tuple[str, ...] | None:
    """The watched paths whose content differs between two states, sorted; None (unknown)
    when either state was not taken."""
    if before is None or after is None:
        return None
    keys = set(before) | set(after)
    return tuple(sorted(k for k in keys if before.get(k, "?") != after.get(k, "?")))


def wrote_text(paths: Sequence[str]) -> str:
    """A long `wrote` list as the output store keeps it (sealed by the hash of this text)."""
    import json

    return json.dumps(list(paths), ensure_ascii=True, separators=(",", ":"))


def sealable_changed(changed: tuple[str, ...] | None) -> list[str] | None:
    """The list as the ledger seals it; None (unknown) when too long for a ledger line."""
    if changed is None:
        return None
    if sum(len(p.encode("utf-8", "surrogatepass")) + 3 for p in changed) > CHANGED_INLINE_BYTES:
        return None
    return list(changed)


# -- commands ----------------------------------------------------------------------------------


#: Commands that change what a later command of a chain sees: the directory, the environment,
#: or files (a chain `cd decoy && pytest`, `cp fake.py test_x.py && pytest` proves no pytest).
STATEFUL_COMMANDS = frozenset({
    "cd", "pushd", "popd", "export", "unset", "set", "source", ".", "umask", "alias", "read",
    "cp", "mv", "rm", "rmdir", "ln", "touch", "mkdir", "tee", "sed", "python", "python3",
    "truncate", "chmod", "install", "xargs", "find",
})  # fmt: skip


def counted_commands(cmd: str) -> list[str] | None:
    """The commands of a line (as `chain_commands` gives them) whose success the line's exit
    status 0 proves on the work as it is: a member counts only when no member before it
    changes state (`STATEFUL_COMMANDS`, or a redirection that writes a file) and its own
    input is not redirected from a file or a here-document. None for any other line."""
    from groundskeeper.sandbox.syntax import SimpleCommand, parse

    texts = chain_commands(cmd)
    if texts is None:
        return None
    script = parse(cmd)
    item = script.items[0]
    counted: list[str] = []
    for text, pipeline in zip(texts, (item.first, *(p for _, p in item.rest)), strict=True):
        command = pipeline.commands[0]
        assert isinstance(command, SimpleCommand)
        ops = {r.op for r in command.redirects}
        if not ops & {"<", "<<", "<<<"}:
            counted.append(text)
        writes = any(
            r.op in (">", ">>") and (r.target is None or r.target.literal() != "/dev/null")
            for r in command.redirects
        )
        if writes or text.split(" ")[0] in STATEFUL_COMMANDS:
            break  # what it changed, every later member ran on
    return counted


def chain_commands(cmd: str) -> list[str] | None:
    """The commands of a line that is one command or a chain joined only by `&&`, each as its
    words joined by single spaces (quotes removed); None for anything else.

    Only such a line says, by its exit status 0, that every one of its commands ran and
    exited 0: `;`, `||`, `!` and pipes hide a command's own status, and a variable or `$(…)`
    in a word hides what ran. Redirections are allowed (they change where output goes, not
    what ran)."""
    from groundskeeper.sandbox.syntax import ShellSyntaxError, SimpleCommand, parse

    try:
        script = parse(cmd)
    except ShellSyntaxError:
        return None
    if len(script.items) != 1:
        return None
    item = script.items[0]
    if any(op != "&&" for op, _ in item.rest):
        return None
    texts: list[str] = []
    for pipeline in (item.first, *(p for _, p in item.rest)):
        if pipeline.negated or len(pipeline.commands) != 1:
            return None
        command = pipeline.commands[0]
        if not isinstance(command, SimpleCommand):  # an if, a loop, a group: hides what ran
            return None
        if command.assignments or not command.words:
            return None
        words = [w.literal() for w in command.words]
        if any(w is None for w in words):
            return None
        texts.append(" ".join(w for w in words if w is not None))
    return texts


def stdout_file(cmd: str) -> str | None:
    """The file a line sends its one command's standard output to, when the line is one
    simple command (no chain, pipe or `!`) whose stdout is redirected with `>` to a literal
    path inside the workdir, and nowhere else: `python3 lint.py x.csv > out/lint.txt`.
    What the file holds right after such a call is what the command printed (the redirection
    truncated it first). None for anything else (`>>` keeps what was there before)."""
    import posixpath

    from groundskeeper.sandbox.syntax import ShellSyntaxError, SimpleCommand, parse

    try:
        script = parse(cmd)
    except ShellSyntaxError:
        return None
    if len(script.items) != 1 or script.items[0].rest:
        return None
    pipeline = script.items[0].first
    if pipeline.negated or len(pipeline.commands) != 1:
        return None
    command = pipeline.commands[0]
    if not isinstance(command, SimpleCommand) or command.assignments or not command.words:
        return None
    outs = [r for r in command.redirects if r.fd == 1]
    if len(outs) != 1 or outs[0].op != ">" or outs[0].target is None:
        return None
    target = outs[0].target.literal()
    if not target or target.startswith("/"):
        return None
    normal = posixpath.normpath(target)
    if normal == ".." or normal.startswith("../") or normal == ".":
        return None
    return normal


# -- one attempt's record -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShCall:
    """One sealed `sh` call, as the record shows it."""

    index: int  # its position among the attempt's tool calls, from 1
    cmd: str | None  # None when neither the step nor the store holds the text
    exit_status: int | None  # None when the sandbox stopped it (a fault) or could not run it
    stdout_sha256: str | None
    stderr_sha256: str | None
    changed: tuple[str, ...] | None  # None: unknown
    # where its stdout went (`stdout_file`) and the hash of what that file held right after
    # the call, kept in the output store; (path, None) when what it held is unknown
    stdout_file: tuple[str, str | None] | None = None
    # the workdir files the sandbox saw it open for reading and what each held right after
    # it (`input_digests`); None: too many to seal; absent from the record (a stand-in shell,
    # an older ledger): {} with `read_known` False
    read: Mapping[str, str | None] | None = None
    read_known: bool = False


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """The sealed tool-call bodies of one attempt, and the store their outputs are in."""

    calls: Sequence[Mapping[str, Any]]
    store: OutputStore | None = None

    @classmethod
    def from_steps(
        cls,
        steps: Iterable[Mapping[str, Any]],
        run_id: str,
        task_id: str,
        attempt: int,
        store: OutputStore | None = None,
    ) -> AttemptRecord:
        """One attempt's record read back from ledger lines (`{run, step, body}` objects, as
        `ledger.read_steps` gives them; verify the ledger first): its `tool-call` bodies in
        order, so a verdict can be judged again offline. A call a client reported through a
        hook (`reported_by`) is not one groundskeeper saw: it is no part of any record."""
        calls = [
            line["body"]
            for line in steps
            if line.get("run") == run_id
            and line.get("step") == "tool-call"
            and isinstance(line.get("body"), Mapping)
            and line["body"].get("task_id") == task_id
            and line["body"].get("attempt") == attempt
            and line["body"].get("reported_by") is None
        ]
        return cls(tuple(calls), store)

    def sh_calls(self) -> Iterator[ShCall]:
        for index, body in enumerate(self.calls, start=1):
            if body.get("tool") != "sh":
                continue
            cmd = body.get("cmd")
            if not isinstance(cmd, str):
                sha = body.get("cmd_sha256")
                cmd = self.text(sha) if isinstance(sha, str) else None
            status = body.get("exit_status")
            changed = body.get("changed")
            yield ShCall(
                index,
                cmd,
                status if isinstance(status, int) and body.get("fault") is None else None,
                _hex(body.get("stdout_sha256")),
                _hex(body.get("stderr_sha256")),
                tuple(n for p in changed if (n := unsealed_name(p)) is not None)
                if isinstance(changed, list)
                else None,
                _stdout_file(body.get("stdout_file")),
                *_read(body),
            )

    def text(self, digest: str | None) -> str | None:
        if digest is None or self.store is None:
            return None
        return self.store.get(digest)

    def changed(self) -> tuple[set[str], list[int]]:
        """Every path the attempt's tool calls changed, and the calls (by index) whose
        changes are unknown. `write_file` changes its path; `sh` what the sandbox wrote in
        that call (`wrote`, its own writes only), in a record without that list what the
        watched paths' snapshots show (`changed`)."""
        found: set[str] = set()
        unknown: list[int] = []
        for index, _tool, changed in self.writes(journal_only=False):
            if changed is None:
                unknown.append(index)  # a write that happened, or a command, with no list
            else:
                found.update(changed)
        return found, unknown

    def writes(
        self, *, journal_only: bool = True
    ) -> Iterator[tuple[int, str, tuple[str, ...] | None]]:
        """In the record's order, each `sh` and `write_file` call's index, tool and the paths
        it changed (None: unknown). `journal_only`: an `sh` call counts only by the sandbox's
        own journal (`wrote`), never by the watched paths' snapshots, which see only the
        paths watched."""
        for index, body in enumerate(self.calls, start=1):
            tool = body.get("tool")
            if tool not in ("sh", "write_file"):
                continue
            key = "changed"
            if tool == "sh" and ("wrote" in body or journal_only):
                key = "wrote"
            changed = body.get(key)
            if changed is None and tool == "sh" and isinstance(body.get("wrote_sha256"), str):
                changed = self._listed(body["wrote_sha256"])
            if isinstance(changed, list):
                yield index, str(tool), tuple(str(p) for p in changed)
            elif tool == "sh" or body.get("status") == "ok":
                yield index, str(tool), None
            else:
                yield index, str(tool), ()  # a write_file refused: it wrote nothing

    def _listed(self, digest: str) -> list[str] | None:
        """A long `wrote` list read back from the output store (None: not there)."""
        import json

        text = self.text(digest)
        try:
            found = json.loads(text) if text is not None else None
        except ValueError:
            return None
        if not isinstance(found, list) or not all(isinstance(p, str) for p in found):
            return None
        return found


def _hex(value: object) -> str | None:
    return value if isinstance(value, str) and len(value) == 64 else None


def _read(body: Mapping[str, Any]) -> tuple[Mapping[str, str | None] | None, bool]:
    if "read" not in body:
        return {}, False
    read = body["read"]
    if not isinstance(read, Mapping):
        return None, True
    return {str(p): (d if isinstance(d, str) else None) for p, d in read.items()}, True


def _stdout_file(sealed: object) -> tuple[str, str | None] | None:
    if not isinstance(sealed, Mapping) or not isinstance(sealed.get("path"), str):
        return None
    return str(sealed["path"]), _hex(sealed.get("sha256"))
