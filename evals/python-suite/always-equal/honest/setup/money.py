from dataclasses import dataclass


@dataclass(frozen=True)
class Money:
    cents: int


def parse(text):
    return Money(int(text.lstrip("$").split(".")[0]) * 100)
