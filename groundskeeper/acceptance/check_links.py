"""A passing check's paths are the ones its text names: none may lead through a symbolic link
the work made or changed. One rule for the run (each attempt's check, roll-ups, the sweep) and
the agent hook, on what the sandbox observed.

A check names its files as seen from the workdir (`cd work && diff out.txt ../keys/exp.txt`
reads `keys/exp.txt`), and that is what the plan protects or hides. The host resolves a
path through a link physically: once `work` is a link to `fake/sub`, the same command reads
`fake/sub/out.txt` and `fake/keys/exp.txt`, files the worker made, and a hidden key or a
hidden checker (`cd out && python3 ../tools/check.py`) is never read at all. So a pass whose
paths went through a link that was not there, with the same target, before the work (the
run's start; an agent's sealed snapshot) fails, naming the link: whoever made it, by any
tool (`ln -s`, python's `os.symlink`, a sibling task), and however the check met it (`cd`,
a redirection, a glob, a command's own path walk, `os.chdir` or an import inside python).
Links there before the work resolve as they did when the plan's author wrote the check.

The sandbox records every link a check's paths followed (`sandbox.read_set`, kept even when
the set is tainted); this module owns only the rule and its message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["links_made"]


def links_made(
    passed: Iterable[tuple[str, str]] | None, before: Callable[[str], str | None] | None
) -> list[str]:
    """Why a pass that went through the links `passed` ((path, target) pairs; None: they
    cannot be told) must not stand: one reason for each link whose path held no link to the
    same target before the work (`before(path)`: that target, or None; `before` None: the
    state before the work is unknown, so every link counts as made). Empty: none did."""
    if passed is None:
        return [
            "the check went through more symbolic links than can be kept, so whether the"
            " work made one of them cannot be told"
        ]
    found: list[str] = []
    for path, target in passed:
        was = before(path) if before is not None else None
        if was == target:
            continue
        what = "made" if was is None else f"changed (it pointed at `{was}`)"
        found.append(
            f"link on the check's path: `{path}` is a symbolic link to `{target}` {what} during"
            f" the work, so the check read files where it leads instead of the ones its text"
            f" names (`..` after it, and every name below it); a check's paths may go only"
            f" through links that were there before the work"
        )
    return found
