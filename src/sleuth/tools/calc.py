"""``calculate``: arithmetic on figures read from the documents (a margin, a ratio, a change
between two years), so the model does not do sums in its head.

The expression is Python's arithmetic syntax over decimal numbers, walked node by node over a
whitelist: numbers as filings write them (``1,234.5``, ``$1.2``, ``$3.4 billion``, ``12%``,
``1.5e6``), ``+ - * /``, ``**`` or ``^`` (power), parentheses, unary minus, ``round abs min
max`` and the names of the ``figures`` given with it. Nothing else parses into something it
evaluates: no other name, attribute, subscript, comparison, comprehension or call. Every
bound is checked before or while it is evaluated, so a hostile expression gets a
:class:`ToolError` at once, never a hang: its length (``MAX_CHARS``), its nodes
(``MAX_NODES``) and nesting (``MAX_DEPTH``), the arguments of a call (``MAX_ARGS``), the
size of an exponent (``MAX_EXPONENT``), and every intermediate value, which is a ``Decimal``
of at most 28 significant digits between ``10**-MAX_MAGNITUDE`` and ``10**MAX_MAGNITUDE``
(the decimal context traps overflow, underflow, division by zero and invalid operations).
Work is thus linear in the expression's size.

Why not a library: ``asteval`` 1.0.10 (the maintained candidate) was tried in its minimal
mode. It bounds exponents (10,000) and string lengths but not work or size: ``[0]*10**8``
built a list of 10**8 items in 3.4 s, ``sum(range(10**8))`` took 7 s (so ``10**12`` runs
for hours), and its symbol table hands out numpy's functions. A whitelist this small is
shorter to check than a general evaluator is to lock down.
"""

from __future__ import annotations

import ast
import decimal
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Annotated

from pydantic import Field

from sleuth.errors import ToolError, ToolNotFound
from sleuth.tools.base import ToolContext, ToolResult, tool
from sleuth.tools.corpus import StrList

MAX_CHARS = 500
MAX_NODES = 200
MAX_DEPTH = 20
MAX_ARGS = 20
MAX_FIGURES = 20
MAX_EXPONENT = 1000
MAX_MAGNITUDE = 40  # every value's absolute value stays under 10**40
_CONTEXT = decimal.Context(prec=28, rounding=decimal.ROUND_HALF_EVEN, Emax=MAX_MAGNITUDE - 1,
                           Emin=-MAX_MAGNITUDE,
                           traps=[decimal.Overflow, decimal.Underflow,
                                  decimal.DivisionByZero, decimal.InvalidOperation])

# A number as a filing writes it: currency sign, thousands commas (no space after them:
# "max(1, 234)" is two arguments), decimals, an exponent, a unit, a percent sign.
_NUMBER = re.compile(
    r"(?<![\w.])[$€£¥]?\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d*)?|\.\d+)"
    r"([eE][+-]?\d{1,3})?"
    r"(?:\s*(thousand|million|billion|trillion)\b|(k|mn|m|bn|b)\b)?(?![\w.])(\s*%)?",
    re.IGNORECASE | re.ASCII)
_UNITS = {"thousand": 3, "k": 3, "million": 6, "mn": 6, "m": 6, "billion": 9, "bn": 9,
          "b": 9, "trillion": 12}
_FIGURE = re.compile(r"^\s*([A-Za-z_]\w{0,59})\s*[=:]\s*(.+?)\s*$")


def _anycase(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


# What the schema publishes, so that a figure or expression it admits is one this reads (JSON
# Schema patterns: no flags, so letters' cases are spelled out). A figure: a name (ASCII, not
# a function's, not starting with "_") and one number as _NUMBER reads it, held under
# 10**39 (18 digits before the point, an exponent of one digit, a unit of at most 10**12).
_NUMBER_SCHEMA = (
    r"[$€£¥]?[ \t]*(?:[0-9]{1,3}(?:,[0-9]{3}){1,5}(?:\.[0-9]+)?|[0-9]{1,18}(?:\.[0-9]*)?"
    r"|\.[0-9]+)(?:[eE](?:[+]?[0-9]|-[0-9]{1,2}))?(?:[ \t]*(?:"
    + "|".join(_anycase(w) for w in ("thousand", "million", "billion", "trillion"))
    + ")|" + "|".join(_anycase(w) for w in ("k", "mn", "m", "bn", "b")) + r")?(?:[ \t]*%)?")
FIGURE_PATTERN = (r"^[ \t]*(?!(?:round|abs|min|max)[ \t]*[=:])[A-Za-z][A-Za-z0-9_]{0,59}"
                  r"[ \t]*[=:][ \t]*" + _NUMBER_SCHEMA + r"[ \t]*$")
# An expression: something other than blanks, in the characters arithmetic is written with
# (no JSON schema says which strings of them are arithmetic: "1/0", "x + 1" and "((" are
# refused with the reason, "x" with 404 when no figure names it)
_ARITHMETIC = r"0-9A-Za-z_.,$€£¥%()+\-*/^×÷−"
EXPRESSION_PATTERN = rf"^[ \t]*[{_ARITHMETIC}][ \t{_ARITHMETIC}]*$"
_SYMBOLS = {"×": "*", "÷": "/", "−": "-", "^": "**"}
_OPERATORS: dict[type[ast.AST], Callable[[Decimal, Decimal], Decimal]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: _power(a, b),
}
_REFUSED = {ast.Mod: "'%' between two values (a percent sign goes right after a number: "
                     "12%)", ast.Attribute: "an attribute", ast.Subscript: "a subscript",
            ast.Compare: "a comparison", ast.BoolOp: "and/or", ast.Constant: "a literal",
            ast.Call: "a call", ast.Lambda: "a lambda", ast.IfExp: "if/else"}


def _power(base: Decimal, exponent: Decimal) -> Decimal:
    if abs(exponent) > MAX_EXPONENT:
        raise ToolError(f"exponent {exponent} is over the limit of {MAX_EXPONENT}")
    return base ** exponent


def _round(value: Decimal, places: Decimal = Decimal(0)) -> Decimal:
    if places != places.to_integral_value() or not 0 <= places <= 10:
        raise ToolError("round(x, n) takes n, the decimal places, from 0 to 10")
    if value.adjusted() + places >= _CONTEXT.prec:  # no digit that far out to round
        return value
    return value.quantize(Decimal(1).scaleb(-int(places)), rounding=decimal.ROUND_HALF_UP)


_FUNCTIONS: dict[str, tuple[Callable[..., Decimal], int, int]] = {  # name: (f, min, max args)
    "round": (_round, 1, 2), "abs": (abs, 1, 1),
    "min": (lambda *values: min(values), 1, MAX_ARGS),
    "max": (lambda *values: max(values), 1, MAX_ARGS),
}


def _tokens(expression: str, names: dict[str, Decimal]) -> str:
    """The expression with every number replaced by a name bound in ``names``."""
    for symbol, python in _SYMBOLS.items():
        expression = expression.replace(symbol, python)

    def bind(match: re.Match[str]) -> str:
        digits, exponent, word, short, percent = match.groups()
        value = Decimal(digits.replace(",", "") + (exponent or ""))
        unit = word or short
        if unit:
            value = value.scaleb(_UNITS[unit.lower()])
        if value.adjusted() >= MAX_MAGNITUDE:
            raise ToolError(f"the number {match.group(0).strip()} is too large")
        name = f"_n{len(names)}"
        names[name] = value / 100 if percent else value
        return f" {name} "

    return _NUMBER.sub(bind, expression)


def _figures(figures: Sequence[str]) -> dict[str, Decimal]:
    """``name = number`` pairs as values by name."""
    out: dict[str, Decimal] = {}
    for item in figures:
        match = _FIGURE.match(item)
        if not match:
            raise ToolError(f"figure {item!r} is not 'name = number' (e.g. "
                            "'revenue = $1,234.5 million')")
        name, text = match.groups()
        if name in _FUNCTIONS or name.startswith("_"):
            raise ToolError(f"figure name {name!r} is reserved")
        found: dict[str, Decimal] = {}
        if _tokens(text, found).strip() != "_n0":
            raise ToolError(f"figure {name!r}: {text!r} is not one number")
        out[name] = found["_n0"]
    return out


class _Walker:
    """Evaluates a parsed expression over the whitelist, counting nodes and depth."""

    def __init__(self, names: dict[str, Decimal]) -> None:
        self.names = names
        self.nodes = 0

    def value(self, node: ast.AST, depth: int = 0) -> Decimal:
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise ToolError(f"the expression is too complex (at most {MAX_NODES} parts, "
                            f"nested {MAX_DEPTH} deep)")
        if isinstance(node, ast.Name):
            if node.id not in self.names:  # 404: a name nothing defines
                raise ToolNotFound(f"unknown name {node.id!r}: give it as a figure "
                                   "('name = number') or write the number")
            return self.names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = self.value(node.operand, depth + 1)
            return -inner if isinstance(node.op, ast.USub) else +inner
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            return _OPERATORS[type(node.op)](left, right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _FUNCTIONS and not node.keywords:
            function, least, most = _FUNCTIONS[node.func.id]
            if not least <= len(node.args) <= most:
                raise ToolError(f"{node.func.id}() takes {least} to {most} arguments")
            return function(*(self.value(a, depth + 1) for a in node.args))
        kind = type(node.op) if isinstance(node, ast.BinOp) else type(node)
        what = _REFUSED.get(kind, type(node).__name__)
        raise ToolError(f"{what} is not arithmetic this tool computes: use numbers, + - * / "
                        "** ( ), a percent sign after a number, round abs min max and the "
                        "figures' names")


def evaluate(expression: str, figures: Sequence[str] = ()) -> tuple[Decimal, str]:
    """The value of ``expression`` (the figures' names bound) and the expression as it was
    computed, every number written out. A ToolError says what is wrong with it."""
    if len(expression) > MAX_CHARS:
        raise ToolError(f"the expression has {len(expression)} characters; at most "
                        f"{MAX_CHARS}")
    if len(figures) > MAX_FIGURES:
        raise ToolError(f"at most {MAX_FIGURES} figures")
    names = _figures(figures)
    numbers: dict[str, Decimal] = {}
    text = _tokens(expression, numbers)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        hint = " (a percent sign after a number makes it a percentage: there is no modulo)" \
            if "%" in expression else ""
        raise ToolError(f"cannot read {expression!r} as arithmetic{hint}") from None
    try:
        with decimal.localcontext(_CONTEXT):
            value = _Walker({**names, **numbers}).value(tree.body)
    except decimal.DivisionByZero:
        raise ToolError("division by zero") from None
    except decimal.Overflow:
        raise ToolError(f"a value reached 10**{MAX_MAGNITUDE}, over the limit") from None
    except decimal.Underflow:
        raise ToolError(f"a value fell under 10**-{MAX_MAGNITUDE}") from None
    except decimal.InvalidOperation:
        raise ToolError("undefined arithmetic (e.g. a fractional power of a negative "
                        "number, or 0/0)") from None
    values = {**names, **numbers}
    shown = re.sub(r"\b\w+\b", lambda m: _plain(values[m.group(0)]) if m.group(0) in values
                   else m.group(0), ast.unparse(tree))
    return value, shown


def _plain(value: Decimal) -> str:
    """A number written out in full (scientific beyond 28 digits)."""
    return format(value.normalize(), "f") if -28 < value.adjusted() < 28 else str(value)


def rounded(value: Decimal) -> str:
    """``value`` as a person reads it: thousands commas and 4 decimals from 1 up, 6
    significant digits below 1, scientific from 10**15 up."""
    if abs(value) >= Decimal("1e15"):
        return format(value, ".6e")
    if abs(value) >= 1:
        text = f"{value.quantize(Decimal('0.0001'), decimal.ROUND_HALF_UP):,f}"
        return text.rstrip("0").rstrip(".")
    return format(float(value), ".6g")


@tool(command="calculate")
def calculate(
    ctx: ToolContext,
    expression: Annotated[str, Field(min_length=1, max_length=MAX_CHARS, json_schema_extra={
        "pattern": EXPRESSION_PATTERN})],
    figures: Annotated[list[Annotated[str, Field(max_length=200, json_schema_extra={
        "pattern": FIGURE_PATTERN})]], StrList, Field(max_length=MAX_FIGURES)] = [],  # noqa: B006
) -> ToolResult:
    """Compute an arithmetic expression exactly, e.g. a margin, a ratio or a growth rate
    from figures read in the documents: "operating_income / revenue" with figures
    ["operating_income = $1,234.5 million", "revenue = $10,000 million"], or "(5,120 -
    4,800) / 4,800". Numbers may be written as in the documents ("1,234.5", "$1.2",
    "$3.4 billion", "12%"); + - * / ** ( ), round, abs, min and max work, nothing else.
    Returns the value and what was computed.

    Args:
        expression: The arithmetic, e.g. "(revenue_2019 - revenue_2018) / revenue_2018".
            Separate function arguments with ", " ("max(1, 234)"): "1,234" is one number.
        figures: Named numbers the expression uses, each "name = number", e.g.
            "revenue_2019 = $5,120 million".
    """
    value, shown = evaluate(expression, figures)
    text = f"{expression.strip()} = {rounded(value)}"
    if 0 < abs(value) < 1:
        text += f" ({rounded(value * 100)}%)"
    text += f"\ncomputed: {shown}"
    if figures:
        text += "\nwith " + "; ".join(f.strip() for f in figures)
    return ToolResult(text, {"value": float(value), "exact": _plain(value),
                             "rounded": rounded(value), "computed": shown,
                             "figures": [f.strip() for f in figures]}, tokens=0)


CALC_TOOLS = (calculate,)
