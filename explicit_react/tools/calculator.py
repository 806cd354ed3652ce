"""The calculator tool: safe arithmetic by walking the expression's syntax tree (never ``eval``)."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from explicit_react.policy import SOURCED_NUMBERS
from explicit_react.tools._calc_text import (
    CONSTANTS,
    FUNCTIONS,
    CalculationError,
    Number,
    decimal_comma_error,
    drop_surplus_closing_parentheses,
    operation_words_error,
    percent_sign,
    with_currency_words,
    with_operator_signs,
    without_thousands_separators,
    without_unit,
    words_error,
)
from explicit_react.tools._calc_text import MAX_ROUND_DIGITS as MAX_ROUND_DIGITS  # re-exported
from explicit_react.tools._errors import Text, tool_error, validation_error_observation

MAX_EXPRESSION_CHARS = 1_000
MAX_INT_BITS = 4_000  # about 1,200 decimal digits: far beyond any real answer, still instant to compute

_BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def evaluate(expression: str) -> Number:
    """Compute an arithmetic expression safely; raise CalculationError with a message for the model.
    An error names the expression as it was written, whatever was read into it before."""
    written = expression.strip()
    if not written:
        raise CalculationError("empty expression; give an arithmetic expression such as 2 * (3 + 4)")
    if len(written) > MAX_EXPRESSION_CHARS:
        raise CalculationError(f"expression too long (over {MAX_EXPRESSION_CHARS} characters)")
    if percent_sign_error := percent_sign(written):
        raise percent_sign_error
    text = with_operator_signs(written)
    text = without_thousands_separators(with_currency_words(drop_surplus_closing_parentheses(text)))
    return _as_written(text, written)


def _evaluate(text: str) -> Number:
    try:
        if _NUMBER_INTO_KEYWORD.search(text):  # "12in * 3": ast.parse would warn on stderr, then fail
            raise SyntaxError("invalid decimal literal")
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        if (unitless := without_unit(text)) is not None:
            return _as_written(unitless, text)
        raise (
            operation_words_error(text)
            or words_error(text)
            or CalculationError(f"invalid expression ({exc.msg}): {text!r}")
        ) from None
    except (RecursionError, MemoryError):
        raise CalculationError("expression is nested too deeply") from None
    try:
        return _Evaluator().visit(tree.body)
    except _UnknownName as exc:
        if (unitless := without_unit(text)) is not None:
            return _as_written(unitless, text)
        raise operation_words_error(text) or words_error(text) or exc from None
    except _ListOfValues as exc:
        raise decimal_comma_error(text) or exc from None
    except CalculationError:
        raise
    except ZeroDivisionError:
        raise CalculationError("division by zero") from None
    except OverflowError:
        raise CalculationError("result too large") from None
    except RecursionError:
        raise CalculationError("expression is nested too deeply") from None
    except (ValueError, TypeError) as exc:
        raise CalculationError(f"cannot compute {text!r}: {exc}") from None


_NUMBER_INTO_KEYWORD = re.compile(r"\d(?:and|else|for|if|in|is|not|or)(?![A-Za-z0-9_])")
"""A number run into a keyword, which Python's parser warns about (on stderr, before it fails): the
warning was silenced with ``warnings.catch_warnings``, which changes the process's warning filters
and, from threads at once, left SyntaxWarnings silenced for the whole program."""


def _as_written(text: str, written: str) -> Number:
    """``text`` computed; an error names ``written``, the expression as the model wrote it (before
    its units, currency signs or thousands separators were read)."""
    try:
        return _evaluate(text)
    except CalculationError as exc:
        if text == written:
            raise
        raise CalculationError(str(exc).replace(repr(text), repr(written))) from None


class _UnknownName(CalculationError):
    """A name that is neither a constant nor a function."""


class _ListOfValues(CalculationError):
    """Values separated by commas outside a call: ``1, 2``, or ``3,50`` with a decimal comma."""


def format_number(value: Number) -> str:
    """Render a result compactly: integers exactly, floats to 15 significant digits (a zero without
    its sign: ``0 / -5`` is 0, not -0)."""
    if isinstance(value, float):
        return format(value + 0.0, ".15g")
    return str(value)


class _Evaluator:
    """Evaluates the few node types that make up arithmetic; everything else is refused by name."""

    def visit(self, node: ast.AST) -> Number:
        handler = getattr(self, f"_visit_{type(node).__name__}", None)
        if handler is None:
            raise CalculationError(_unsupported(node))
        result: Number = handler(node)
        return _checked(result)

    def _visit_Constant(self, node: ast.Constant) -> Number:
        # bool is an int subclass; True + 1 is not arithmetic anyone means to do here.
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        raise CalculationError(f"only numbers are allowed, not {node.value!r}")

    def _visit_Tuple(self, node: ast.Tuple) -> Number:
        raise _ListOfValues(
            "a comma may only separate a function's arguments, as in max(3, 5); write one expression"
        )

    def _visit_Name(self, node: ast.Name) -> Number:
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise CalculationError(f"{node.id} is a function; call it like {node.id}(2)")
        raise _UnknownName(f"unknown name {node.id!r}; allowed constants: {', '.join(CONSTANTS)}")

    def _visit_UnaryOp(self, node: ast.UnaryOp) -> Number:
        unary = _UNARY_OPERATORS.get(type(node.op))
        if unary is None:
            raise CalculationError(_unsupported(node.op))
        result: Number = unary(self.visit(node.operand))
        return result

    def _visit_BinOp(self, node: ast.BinOp) -> Number:
        # A chain such as 1 + 2 + ... + 500 nests to the left: it is walked in a loop, since
        # recursing once per operator ran out of stack at 500 terms.
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        for link in chain:  # an unsupported operator is named first, as the recursion named it
            if type(link.op) not in _BINARY_OPERATORS:
                raise CalculationError(_unsupported(link.op))
        value = self.visit(chain[-1].left)
        for link in reversed(chain):
            value = _checked(self._apply(link.op, value, self.visit(link.right)))
        return value

    @staticmethod
    def _apply(operator: ast.operator, left: Number, right: Number) -> Number:
        """``left operator right``, for an operator ``_visit_BinOp`` has checked is supported."""
        if isinstance(operator, ast.Pow):
            _check_power(left, right)
        result: Number = _BINARY_OPERATORS[type(operator)](left, right)
        return result

    def _visit_Call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise CalculationError(
                f"unsupported function {ast.unparse(node.func)!r}; allowed: {', '.join(FUNCTIONS)}"
            )
        if node.keywords:
            raise CalculationError(f"{node.func.id}() takes positional arguments only")
        arguments = [self.visit(argument) for argument in node.args]
        result: Number = FUNCTIONS[node.func.id](*arguments)
        return result


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse a power whose result would be astronomically large before computing it."""
    integers = isinstance(base, int) and isinstance(exponent, int)
    if integers and exponent > 0 and abs(base) > 1 and exponent * math.log2(abs(base)) > MAX_INT_BITS:
        raise CalculationError("result too large (the power has more than about 1,200 digits)")


def _checked(value: Number) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise CalculationError("result too large (more than about 1,200 digits)")
    if isinstance(value, complex):  # e.g. (-8) ** 0.5
        raise CalculationError("the result is a complex number; only real arithmetic is supported")
    if isinstance(value, float) and not math.isfinite(value):  # 1e309, 1e308 * 10, inf - inf
        raise CalculationError("result too large for a decimal number (it overflowed to infinity)")
    return value


def _unsupported(node: ast.AST) -> str:
    kind = type(node).__name__
    if isinstance(node, ast.BitXor):
        return "^ is not a power operator here; use ** (e.g. 2 ** 10)"
    if isinstance(node, ast.Attribute):
        return "attribute access is not allowed"
    return f"unsupported syntax ({kind}); use numbers, + - * / // % **, parentheses and math functions"


class CalculatorInput(BaseModel):
    """Arguments of the calculator tool."""

    expression: Text = Field(description="an arithmetic expression, e.g. 68000000 - 2100000")


class CalculatorTool(BaseTool):
    """Safe arithmetic: numbers, + - * / // % **, parentheses and common math functions."""

    name: str = "calculator"
    description: str = (
        "Evaluate one arithmetic expression. Input: the expression, written with numbers only (no words "
        "or units). Supports + - * / // % ** and parentheses, sqrt, log, exp, sin, cos, pi, e, round, min, max."
    )
    args_schema: type[BaseModel] = CalculatorInput
    metadata: dict[str, Any] | None = Field(default_factory=lambda: {SOURCED_NUMBERS: True})
    handle_tool_error: bool = True
    handle_validation_error: Any = validation_error_observation

    def _run(self, expression: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        try:
            return format_number(evaluate(expression))
        except CalculationError as exc:
            raise tool_error(str(exc)) from None

    async def _arun(self, expression: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        """Computed on the event loop: it takes microseconds (exponent bombs are refused before any
        work), while LangChain's default runs a sync tool in a thread pool, which costs far more."""
        return self._run(expression)


calculator = CalculatorTool()
"""A ready calculator tool instance (tool name ``calculator``)."""
