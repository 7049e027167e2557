"""Whether a task's own words ask for something a pattern names, in a sentence that does
not negate it ("add a test for mul", "update its doctest examples"; not "do not add tests").

Light on purpose: the agent hook reads a doctest task's text at a stop, where the whole text
reading (`plan.expected`, `plan.asking`: ~18 ms of imports) is not loaded.
"""

from __future__ import annotations

import re

from groundskeeper.plan.spec import TaskSpec

__all__ = ["text_asks"]

#: Words that, before the ask in its sentence, negate it ("do not add tests").
_NOT = frozenset({"not", "never", "don't", "dont", "no", "without", "nor"})


def text_asks(task: TaskSpec, ask: re.Pattern[str]) -> bool:
    """Whether some sentence of the task's title or text (its check aside) holds `ask`
    with no negating word before it."""
    heading = task.heading
    check = heading.check.text if heading.check is not None else ""
    body = heading.body.replace(check, "") if check else heading.body
    for sentence in re.split(r"(?<=[.;!?])\s+|\n", heading.title + "\n" + body):
        for match in ask.finditer(sentence):
            before = {w.strip("`'\"(),:;").lower() for w in sentence[: match.start()].split()}
            if not before & _NOT:
                return True
    return False
