"""Which command names the sandbox can run: the box.wasm commands plus the host builtins.

The box list mirrors BOX_COMMANDS in box/box.h (a test keeps the two equal); a name in the
list may still answer 127 while its C source is unwritten, which is fail-closed.
"""

from __future__ import annotations

# Keep in step with BOX_COMMANDS in groundskeeper/sandbox/box/box.h (`[` is `test`).
BOX_COMMANDS: frozenset[str] = frozenset(
    {
        "test", "[", "true", "false", "echo", "printf", "cat", "head", "tail", "wc",
        "grep", "sed", "ls", "sort", "uniq", "cut", "tr", "cmp", "diff", "sha256sum",
        "mkdir", "cp", "mv", "rm", "touch", "seq", "sleep", "basename", "dirname",
        "pwd", "env", "expr", "find",
    }
)  # fmt: skip

# Run by the interpreter itself, because they change the shell's own state.
BUILTINS: frozenset[str] = frozenset(
    {"cd", ":", "exit", "export"}
    | {"break", "continue", "read", "xargs"}  # xargs: its commands run as stages of their own
)

COMMANDS: frozenset[str] = BOX_COMMANDS | BUILTINS
