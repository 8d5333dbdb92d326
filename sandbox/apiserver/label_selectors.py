"""Label selectors parsed as apimachinery's ``labels.Parse`` parses them, errors included.

The grammar (``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``,
``a>1``, ``a<1``, joined by commas) goes through the same lexer and recursive-descent parser as
the real server's, so a malformed selector gets the same 400 message (``unable to parse
requirement: found 'a' expected: '('``), and keys and values are validated as label keys and
values are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .errors import ApiError
from .field_errors import aggregate, invalid, not_supported
from .object_names import LABEL_KEY, label_value, qualified_name

LabelPredicate = Callable[[Mapping[str, str]], bool]

# tokens
END, CLOSE, COMMA, NOT, DOUBLE_EQUALS, EQUALS, GREATER, IDENTIFIER, IN, LESS, NOT_EQUALS, NOT_IN, OPEN = range(1, 14)
ERROR = 0
LITERALS = {
    ")": CLOSE,
    ",": COMMA,
    "!": NOT,
    "==": DOUBLE_EQUALS,
    "=": EQUALS,
    ">": GREATER,
    "in": IN,
    "<": LESS,
    "!=": NOT_EQUALS,
    "notin": NOT_IN,
    "(": OPEN,
}
OPERATORS = {IN: "in", EQUALS: "=", DOUBLE_EQUALS: "==", GREATER: "gt", LESS: "lt", NOT_IN: "notin", NOT_EQUALS: "!="}
BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
SPECIAL = "=!(),><"
WHITESPACE = " \t\r\n"


def _lex(text: str) -> list[tuple[int, str]]:
    """The scanned items, ending with END (the lexer of labels/selector.go)."""
    items: list[tuple[int, str]] = []
    position = 0
    while True:
        while position < len(text) and text[position] in WHITESPACE:
            position += 1
        if position >= len(text):
            items.append((END, ""))
            return items
        if text[position] in SPECIAL:
            token, literal, buffer = ERROR, "", ""
            while position < len(text) and text[position] in SPECIAL:
                buffer += text[position]
                if buffer in LITERALS:
                    token, literal = LITERALS[buffer], buffer
                    position += 1
                elif token != ERROR:
                    break
                else:
                    position += 1
            items.append((token, literal) if token != ERROR else (ERROR, f"error expected: keyword found '{buffer}'"))
            continue
        start = position
        while position < len(text) and text[position] not in SPECIAL and text[position] not in WHITESPACE:
            position += 1
        word = text[start:position]
        items.append((LITERALS.get(word, IDENTIFIER), word))


class _SelectorError(Exception):
    pass


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator in ("in", "=", "=="):
            return value is not None and value in self.values
        if self.operator in ("notin", "!="):
            return value is None or value not in self.values
        if self.operator == "exists":
            return self.key in labels
        if self.operator == "!":
            return self.key not in labels
        try:
            number, bound = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return number > bound if self.operator == "gt" else number < bound


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[int, str]:
        token, literal = self.items[self.position]
        return (IDENTIFIER if values and token in (IN, NOT_IN) else token), literal

    def consume(self, values: bool = True) -> tuple[int, str]:
        found = self.lookahead(values)
        self.position += 1
        return found

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.lookahead()
            if token == END:
                return requirements
            if token not in (IDENTIFIER, NOT):
                raise _SelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self.requirement())
            except _SelectorError as error:
                raise _SelectorError(f"unable to parse requirement: {error}") from None
            token, literal = self.consume()
            if token == END:
                return requirements
            if token != COMMA:
                raise _SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            following, literal = self.lookahead()
            if following not in (IDENTIFIER, NOT):
                raise _SelectorError(f"found '{literal}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        operator = ""
        token, key = self.consume()
        if token == NOT:
            operator = "!"
            token, key = self.consume()
        if token != IDENTIFIER:
            raise _SelectorError(f"found '{key}', expected: identifier")
        problems = qualified_name(key, LABEL_KEY)
        if problems:
            raise _SelectorError(str(invalid("", key, "; ".join(problems))))
        if operator == "!" or self.lookahead()[0] in (END, COMMA):
            # "!key" ends the requirement whatever follows (the caller refuses anything but "," then)
            return _checked(key, operator or "exists", ())
        token, literal = self.consume(values=False)
        if token not in OPERATORS:
            raise _SelectorError(f"found '{literal}', expected: {BINARY_OPERATORS}")
        operator = OPERATORS[token]
        values = self.set_values() if operator in ("in", "notin") else self.exact_value()
        return _checked(key, operator, values)

    def set_values(self) -> tuple[str, ...]:
        token, literal = self.consume()
        if token != OPEN:
            raise _SelectorError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead()
        if token == CLOSE:
            self.consume()
            return ("",)
        if token not in (IDENTIFIER, COMMA):
            raise _SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.consume()[0] != CLOSE:
            raise _SelectorError(f"found '{literal}', expected: ')'")
        return values

    def identifiers(self) -> tuple[str, ...]:
        found: set[str] = set()
        while True:
            token, literal = self.consume()
            if token == IDENTIFIER:
                found.add(literal)
                following, next_literal = self.lookahead()
                if following == CLOSE:
                    return tuple(sorted(found))
                if following != COMMA:
                    raise _SelectorError(f"found '{next_literal}', expected: ',' or ')'")
            elif token == COMMA:
                if not found:
                    found.add("")
                following, _ = self.lookahead()
                if following == CLOSE:
                    found.add("")
                    return tuple(sorted(found))
                if following == COMMA:
                    found.add("")
            else:
                raise _SelectorError(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> tuple[str, ...]:
        if self.lookahead()[0] in (END, COMMA):
            return ("",)
        token, literal = self.consume()
        if token == IDENTIFIER:
            return (literal,)
        raise _SelectorError(f"found '{literal}', expected: identifier")


def _checked(key: str, operator: str, values: tuple[str, ...]) -> Requirement:
    """labels.NewRequirement's checks of the values (the key was checked by the parser)."""
    problems = []
    if operator in ("gt", "lt"):
        for index, value in enumerate(values):
            try:
                int(value)
            except ValueError:
                problems.append(
                    invalid(f"values[{index}]", value, "for 'Gt', 'Lt' operators, the value must be an integer")
                )
    elif operator not in ("in", "notin", "=", "==", "!=", "exists", "!"):
        problems.append(not_supported("operator", operator, list(OPERATORS.values())))
    for index, value in enumerate(values):
        problems.extend(invalid(f"values[{index}][{key}]", value, p) for p in label_value(value))
    if problems:
        raise _SelectorError(aggregate(problems))
    return Requirement(key, operator, values)


def parse_label_selector(text: str | None) -> LabelPredicate:
    """A predicate over an object's labels; ``ApiError`` 400 with the real server's message on bad input."""
    try:
        requirements = _Parser(text or "").parse()
    except _SelectorError as error:
        raise ApiError.bad_request(str(error)) from None
    return lambda labels: all(r.matches(labels) for r in requirements)
