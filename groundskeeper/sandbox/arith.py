"""Integer arithmetic of `$((…))` and `((…))`, as bash evaluates it.

It owns the expression language (C's operators with bash's precedence, 64-bit wrap-around,
variables without `$`, assignment operators) over an already expanded text. It does not
expand `$X` or `$(…)` (the interpreter does that first) nor decide what an error does to
the script.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from groundskeeper.errors import GroundskeeperError

_TOKEN = re.compile(
    r"\s*(?:(?P<num>[0-9][0-9A-Za-z_@#]*)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|"
    r"(?P<op>\*\*=|<<=|>>=|\*\*|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&^|]=|[-+*/%<>=!~&^|?:,()]))"
)
_BINARY = [  # lowest to highest precedence, after `,`, assignment and `?:`
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
]
_ASSIGN = frozenset({"=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|="})
# Parentheses, unary operators and variables whose values are expressions, inside one
# another: each level costs the evaluator a few Python frames.
MAX_NESTING = 40


class ArithError(GroundskeeperError):
    """An expression bash would refuse; `message` reads like bash's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _wrap(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >> 63 else value


def evaluate(
    text: str,
    get: Callable[[str], str],
    put: Callable[[str, str], None],
    tick: Callable[[], None] = lambda: None,
    depth: int = 0,
) -> int:
    """The value of `text`; `get` reads a variable, `put` assigns one (as decimal text);
    `tick` is called now and then while a long expression is read (a deadline)."""
    if depth > MAX_NESTING:
        raise ArithError(f"{text}: expression recursion level exceeded")
    return _Evaluator(text, get, put, tick, depth).run()


class _Evaluator:
    def __init__(
        self,
        text: str,
        get: Callable[[str], str],
        put: Callable[[str, str], None],
        tick: Callable[[], None],
        depth: int,
    ) -> None:
        self.text = text
        self.get = get
        self.put = put
        self.tick = tick
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, offset)
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            match = _TOKEN.match(stripped, pos)
            if match is None or match.end() == pos:
                rest = stripped[pos:].strip()
                raise ArithError(
                    f"{text.strip()}: syntax error: invalid arithmetic operator "
                    f'(error token is "{rest}")'
                )
            if not len(self.tokens) & 0xFFF:
                tick()
            kind = match.lastgroup or "op"
            self.tokens.append((kind, match.group(kind), match.start(kind)))
            pos = match.end()
        self.index = 0
        self.skip = 0  # > 0 while evaluating a branch whose value is not used
        self.nesting = depth  # levels open, this expression's and its callers' together

    # -- tokens

    def peek(self) -> str:
        if self.index < len(self.tokens):
            kind, token, _ = self.tokens[self.index]
            return token if kind == "op" else ""
        return ""

    def error(self, what: str) -> ArithError:
        if self.index < len(self.tokens):
            rest = self.text[self.tokens[self.index][2] :].strip()
        else:
            rest = ""
        shown = self.text.strip()
        if not rest:
            return ArithError(f'{shown}: syntax error: operand expected (error token is "")')
        return ArithError(f'{shown}: {what} (error token is "{rest}")')

    def run(self) -> int:
        if not self.tokens:
            return 0
        value = self.comma()
        if self.index < len(self.tokens):
            raise self.error("syntax error in expression")
        return value

    # -- grammar, lowest precedence first

    def comma(self) -> int:
        value = self.assignment()
        while self.peek() == ",":
            self.index += 1
            value = self.assignment()
        return value

    def assignment(self) -> int:
        if (
            self.index + 1 < len(self.tokens)
            and self.tokens[self.index][0] == "name"
            and self.tokens[self.index + 1][0] == "op"
            and self.tokens[self.index + 1][1] in _ASSIGN
        ):
            name = self.tokens[self.index][1]
            op = self.tokens[self.index + 1][1]
            self.index += 2
            value = self.assignment()
            if op != "=":
                value = self.apply(op[:-1], self.variable(name), value)
            if not self.skip:
                self.put(name, str(value))
            return value
        return self.conditional()

    def conditional(self) -> int:
        condition = self.binary(0)
        if self.peek() != "?":
            return condition
        self.index += 1
        self.skip += condition == 0
        yes = self.assignment()
        self.skip -= condition == 0
        if self.peek() != ":":
            raise self.error("syntax error: `:' expected for conditional expression")
        self.index += 1
        self.skip += condition != 0
        no = self.conditional()
        self.skip -= condition != 0
        return yes if condition else no

    def binary(self, level: int) -> int:
        if level == len(_BINARY):
            return self.power()
        operators = _BINARY[level]
        value = self.binary(level + 1)
        while self.peek() in operators and self.peek():
            op = self.peek()
            self.index += 1
            if op == "&&":
                self.skip += value == 0
                right = self.binary(level + 1)
                self.skip -= value == 0
                value = int(bool(value) and bool(right))
            elif op == "||":
                self.skip += value != 0
                right = self.binary(level + 1)
                self.skip -= value != 0
                value = int(bool(value) or bool(right))
            else:
                value = self.apply(op, value, self.binary(level + 1))
        return value

    def power(self) -> int:
        base = self.unary()
        if self.peek() == "**":
            self.index += 1
            exponent = self.power()  # right-associative
            return self.apply("**", base, exponent)
        return base

    def deeper(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise self.error(f"expression nested too deeply (limit {MAX_NESTING})")

    def unary(self) -> int:
        op = self.peek()
        if op in ("-", "+", "!", "~"):
            self.index += 1
            self.deeper()
            value = self.unary()
            self.nesting -= 1
            return {"-": _wrap(-value), "+": value, "!": int(value == 0), "~": ~value}[op]
        if op in ("++", "--"):
            self.index += 1
            if self.index >= len(self.tokens) or self.tokens[self.index][0] != "name":
                raise self.error("syntax error: operand expected")
            name = self.tokens[self.index][1]
            self.index += 1
            value = _wrap(self.variable(name) + (1 if op == "++" else -1))
            if not self.skip:
                self.put(name, str(value))
            return value
        return self.postfix()

    def postfix(self) -> int:
        if self.index >= len(self.tokens):
            raise self.error("syntax error: operand expected")
        kind, token, _ = self.tokens[self.index]
        if kind == "op" and token == "(":
            self.index += 1
            self.deeper()
            value = self.comma()
            self.nesting -= 1
            if self.peek() != ")":
                raise self.error("syntax error: `)' expected")
            self.index += 1
            return value
        if kind == "num":
            self.index += 1
            return self.number(token)
        if kind == "name":
            self.index += 1
            value = self.variable(token)
            if self.peek() in ("++", "--"):
                step = 1 if self.peek() == "++" else -1
                self.index += 1
                if not self.skip:
                    self.put(token, str(_wrap(value + step)))
            return value
        raise self.error("syntax error: operand expected")

    # -- values

    def variable(self, name: str) -> int:
        text = self.get(name).strip()
        if not text:
            return 0
        if re.fullmatch(r"-?[0-9]+", text):
            return _wrap(int(text))
        return evaluate(text, self.get, self.put, self.tick, self.nesting + 1)

    def number(self, token: str) -> int:
        base = 10
        digits = token
        if "#" in token:
            given, _, digits = token.partition("#")
            if not given.isdigit() or not 2 <= int(given) <= 64:
                raise self.error("invalid arithmetic base")
            base = int(given)
        elif token[:2] in ("0x", "0X"):
            base, digits = 16, token[2:]
        elif len(token) > 1 and token[0] == "0":
            base, digits = 8, token[1:]
        alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
        if base <= 36:
            digits = digits.lower()
        value = 0
        if not digits and base != 16:  # bash reads a bare `0x` as 0
            raise self.error("invalid number")
        for char in digits:
            digit = alphabet.find(char)
            if digit < 0 or digit >= base:
                raise self.error("value too great for base")
            value = value * base + digit
        return _wrap(value)

    def apply(self, op: str, left: int, right: int) -> int:
        if op in ("/", "%"):
            if right == 0:
                if self.skip:
                    return 0
                self.index -= 1
                raise self.error("division by 0")
            quotient = abs(left) // abs(right)
            if (left < 0) != (right < 0):
                quotient = -quotient
            return _wrap(quotient if op == "/" else left - quotient * right)
        if op == "**":
            if right < 0:
                if self.skip:
                    return 0
                raise self.error("exponent less than 0")
            return _wrap(pow(left, right, 1 << 64))
        if op in ("<<", ">>"):
            shift = right & 63
            return _wrap(left << shift) if op == "<<" else left >> shift
        results: dict[str, Callable[[int, int], int]] = {
            "+": lambda a, b: a + b,
            "-": lambda a, b: a - b,
            "*": lambda a, b: a * b,
            "<": lambda a, b: int(a < b),
            ">": lambda a, b: int(a > b),
            "<=": lambda a, b: int(a <= b),
            ">=": lambda a, b: int(a >= b),
            "==": lambda a, b: int(a == b),
            "!=": lambda a, b: int(a != b),
            "&": lambda a, b: a & b,
            "^": lambda a, b: a ^ b,
            "|": lambda a, b: a | b,
        }
        return _wrap(results[op](left, right))
