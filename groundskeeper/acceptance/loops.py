"""Fix loops that end: the circuit breaker and the run-wide attempt budget.

It owns what "the same failure" means (`normalize_failure`: volatile parts such as
sentinels, temp names, timings, hashes and pids taken out; line numbers kept), the breaker that
ends a task after N of them in a row, the run's cap on attempts, and the stop codes. The
runner decides when to ask them; `:max-attempts:` stays the runner's own per-task limit.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DEFAULT_BREAKER",
    "STOP_ATTEMPT_CAP",
    "STOP_BREAKER",
    "STOP_MAX_ATTEMPTS",
    "AttemptBudget",
    "Breaker",
    "normalize_failure",
]

DEFAULT_BREAKER = 3

#: The stop codes: why a task's fix loop ended without DONE (the report's `stop`, the sealed
#: `state` step's `stop`, telemetry's `task_events.stop`).
STOP_MAX_ATTEMPTS: Final = "max-attempts"  # every attempt `:max-attempts:` allows was used
STOP_BREAKER: Final = "breaker"  # the same normalized failure N times in a row
STOP_ATTEMPT_CAP: Final = "attempt-cap"  # the run had started --max-total-attempts attempts

# Each volatile part and what stands in for it. Order matters: sentinels and temp names
# hold hex runs and digits that the later, more general rules would otherwise eat in part.
_HEX = "[0-9a-fA-F]"
_DATE_TIME = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
_DURATION_UNITS = "ns|µs|us|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?"
_VOLATILE_TABLE: tuple[tuple[str, str], ...] = (
    (r"__WB_CHECK_OK_[0-9A-Za-z]*__", "<sentinel>"),
    # temp names: paths under /tmp, mkstemp's `tmpXXXXXXXX`, a run's `.NAME.XXXXXX.tmp`
    (r"(?:/(?:private/)?(?:var/)?tmp|/dev/shm)(?:/[^\s'\"`:]*)?", "<tmp>"),
    (r"\btmp[_-]?[0-9A-Za-z_]{4,}\b", "<tmp>"),
    (r"\.[^\s/'\"`]+\.[0-9A-Za-z_]{6,}\.tmp\b", "<tmp>"),
    # timestamps and clock times before durations, so their digits go as one
    (rf"\b{_DATE_TIME}", "<time>"),
    (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<time>"),
    (r"\b\d{8}T\d{6}Z?", "<time>"),
    (rf"\b{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\b", "<uuid>"),
    (r"\b0x[0-9a-fA-F]+\b", "<hex>"),
    # a run of 7+ hex digits holding both a digit and a letter (a git or content hash), or
    # 16+ of them whatever they hold; a plain number or word is substance and stays
    (rf"\b(?={_HEX}*\d)(?={_HEX}*[a-fA-F]){_HEX}{{7,}}\b", "<hash>"),
    (rf"\b{_HEX}{{16,}}\b", "<hash>"),
    # durations: `123 ms`, `1.5s`, `0.25 seconds`, `2 minutes`, `took 3.2`
    (rf"(?i)\b\d+(?:[.,]\d+)?\s?(?:{_DURATION_UNITS})\b", "<duration>"),
    (r"(?i)\b(took|elapsed)\s+\d+(?:[.,]\d+)?\b", r"\1 <duration>"),
    # a line in a temp file is as volatile as its name (`/tmp/x.py:12:4`, `"/tmp/x.py", line
    # 12`); every other line number points into the work or the check (`check line 3`,
    # `data.txt:12`): a failure that moved is progress, and stays apart
    (r"<tmp>(?::\d+){1,2}\b", "<tmp>"),
    (r"(?i)(<tmp>[\"']?,?\s*line)\s*\d+", r"\1 <n>"),
    # process ids: `pid 4242`, `pid=4242`, `PID: 4242`, `[4242]` after a program name
    (r"(?i)\b(pid|process|thread)\s*[:=#]?\s*\d+\b", r"\1 <pid>"),
    (r"(?<=[A-Za-z_])\[\d+\]", "[<pid>]"),
)
_VOLATILE = tuple((re.compile(pattern), placeholder) for pattern, placeholder in _VOLATILE_TABLE)
_SPACE = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def normalize_failure(text: str) -> str:
    """A failure's text with its volatile parts replaced by placeholders and whitespace
    collapsed: two failures that differ only in those parts normalize to the same text;
    failures that differ in what went wrong (a command, a message, a count) do not."""
    for pattern, placeholder in _VOLATILE:
        text = pattern.sub(placeholder, text)
    lines = (_SPACE.sub(" ", line).strip() for line in text.strip().splitlines())
    return _BLANK_LINES.sub("\n", "\n".join(lines))


@dataclass(slots=True)
class Breaker:
    """One task's circuit breaker: `failed` with each failed attempt's text; it trips when
    the last `limit` failures normalize to the same text."""

    limit: int = DEFAULT_BREAKER
    streak: int = 0
    last: str | None = None

    def __post_init__(self) -> None:
        if self.limit < 2:
            raise ValueError(f"a breaker needs a limit of at least 2, not {self.limit}")

    def failed(self, text: str) -> bool:
        """Count one failure; True when it is the `limit`-th same failure in a row."""
        normalized = normalize_failure(text)
        self.streak = self.streak + 1 if normalized == self.last else 1
        self.last = normalized
        return self.streak >= self.limit


@dataclass
class AttemptBudget:
    """The run's cap on attempts (`--max-total-attempts`), shared by every task's thread.

    `take` before each attempt; once `limit` attempts were taken every later `take` is
    refused and `refused` latches, which tells the runner to start nothing more."""

    limit: int | None = None  # None: no cap
    taken: int = 0
    refused: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take(self) -> bool:
        with self._lock:
            if self.limit is not None and self.taken >= self.limit:
                self.refused = True
                return False
            self.taken += 1
            return True

    @property
    def spent(self) -> bool:
        with self._lock:
            return self.limit is not None and self.taken >= self.limit
