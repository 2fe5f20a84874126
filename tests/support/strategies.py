"""Hypothesis strategies for what a client may send: JSON numbers of any size, text with lone
surrogates and control characters, JSON values and bodies written out as raw request bytes."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from urllib.parse import quote

from hypothesis import strategies as st

# --- JSON numbers, as text: Python could not write most of them --------------------------

digit_strings = st.one_of(
    st.text("0123456789", min_size=1, max_size=40),
    # runs that round to a short amount in 28 digits: 000...001, 999...999
    st.builds(lambda run, zeros, last: run * zeros + last, st.sampled_from("09"),
              st.integers(25, 40), st.sampled_from("19")),
)
whole_parts = st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,39}", fullmatch=True),
                        st.integers(4290, 4400).map(lambda n: "9" * n))  # around int()'s limit
exponents = st.one_of(
    st.integers(-40, 40).map(str),
    st.integers(-10**9 - 10, -999990).map(str),  # past the default context's Emin
    st.integers(-10**22, 10**22).map(str),  # past Decimal's ±10**18 and the context's ±999999
    st.sampled_from(["-1000000000", "999999999999999999", "-999999999999999999", "0" * 30 + "5"]),
)


@st.composite
def json_numbers(draw) -> str:
    """Text of a JSON number: any sign, digits, fraction and exponent the grammar allows."""
    text = draw(st.sampled_from(["", "-"])) + draw(whole_parts)
    if draw(st.booleans()):
        text += "." + draw(digit_strings)
    if draw(st.booleans()):
        exponent = draw(exponents)
        text += draw(st.sampled_from("eE")) + ("" if exponent.startswith("-") else
                                                draw(st.sampled_from(["", "+"]))) + exponent
    return text


# --- text --------------------------------------------------------------------------------

# Every code point, lone surrogates and C0/C1 controls included (hypothesis leaves out
# surrogates unless told otherwise).
any_character = st.characters(exclude_categories=())
NASTY_STRINGS = [
    "", " ", "\x00", "a\x00b", "\ud800", "\udfff", "a\udc00b", "\u202e", "\ufeff", "\u2028",
    "\r\n", "\t", "\x7f", "\x85", "%00", "%ED%A0%80", "%", "../../etc/passwd", "..\\..\\",
    "<script>alert(1)</script>", "' OR '1'='1", "\"; DROP TABLE transactions; --",
    "${jndi:ldap://x}", "{{7*7}}", "=HYPERLINK(\"x\")", "x" * 10_000, "é" * 300, "😀" * 100,
    "null", "NaN", "-0", "1e400", "SBX-CAPTURED", "PAY-0000000000000000", "EUR", "card",
    "x;=1+1;=cmd|' /C calc'!A0", "a,@SUM(1+1)\n-2",  # formula cells after a CSV separator
]
# What no database can store or no UTF-8 holds, weighted up: it finds the most bugs.
UNSTORABLE_STRINGS = ["\x00", "a\x00b", "x" * 80 + "\x00", "\ud800", "a\udfffb"]
hostile_text = st.one_of(st.sampled_from(NASTY_STRINGS), st.sampled_from(UNSTORABLE_STRINGS),
                         st.text(any_character, max_size=40))


# --- JSON values, written as raw text ------------------------------------------------------

@dataclass(frozen=True)
class Raw:
    """JSON text written into a body as it is: numbers no Python value writes, deep nesting."""

    text: str


def to_json(value, ascii_only: bool = True) -> str:
    """JSON text of dicts, lists, str, int, bool, None and Raw. With ascii_only, lone surrogates
    are \\udXXX escapes, as a client's JSON library writes them; without, they are written as
    the bytes no UTF-8 text has (see body_bytes)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=ascii_only)}: {to_json(v, ascii_only)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(to_json(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def body_bytes(value, ascii_only: bool = True) -> bytes:
    """The request body of a JSON value (lone surrogates as invalid UTF-8 when not escaped)."""
    return to_json(value, ascii_only).encode("utf-8", "surrogatepass")


def _nested(depth: int, array: bool) -> Raw:
    """Arrays or objects nested `depth` deep: around and past the parser's recursion limit."""
    opening, closing = ("[", "]") if array else ('{"a": ', "}")
    return Raw(opening * depth + "1" + closing * depth)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), json_numbers().map(Raw), hostile_text)
deeply_nested = st.builds(_nested, st.sampled_from([100, 999, 1000, 1001, 5000, 100_000]),
                          st.booleans())
json_values = st.one_of(
    st.recursive(scalars, lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(hostile_text, children, max_size=4)),
        max_leaves=10),
    deeply_nested,
)


def _paths(value, prefix=()) -> list[tuple]:
    """The key paths of every field of a body, nested ones included."""
    found = []
    for key, inner in value.items():
        found.append(prefix + (key,))
        if isinstance(inner, dict):
            found.extend(_paths(inner, prefix + (key,)))
    return found


def _objects(value, prefix=()) -> list[tuple]:
    """The key paths of the body and of every object inside it."""
    found = [prefix]
    for key, inner in value.items():
        if isinstance(inner, dict):
            found.extend(_objects(inner, prefix + (key,)))
    return found


def _at(value, path):
    for key in path:
        value = value[key]
    return value


@st.composite
def bodies_like(draw, valid: dict) -> dict:
    """A body close to a valid one: one to three fields, at any depth, replaced by a hostile
    value or dropped, or joined by an unknown field with a hostile name."""
    body = copy.deepcopy(valid)
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["replace", "drop", "unknown"]))
        if action == "unknown":
            _at(body, draw(st.sampled_from(_objects(body))))[draw(hostile_text)] = draw(json_values)
            continue
        paths = _paths(body)
        if not paths:
            break
        *parent, key = draw(st.sampled_from(paths))
        if action == "drop":
            del _at(body, parent)[key]
        else:
            _at(body, parent)[key] = draw(json_values)
    return body


def unknown_keys(count: int) -> bytes:
    """An object of `count` unknown keys: each one a field error, of which an answer shows 50."""
    return json.dumps({str(i): 0 for i in range(count)}).encode()


def raw_bodies(valid: dict) -> st.SearchStrategy[bytes]:
    """Request bodies for an endpoint whose valid body is `valid`: mostly near-valid ones, then
    any JSON value, and bytes that are no JSON (or no UTF-8) at all."""
    return st.one_of(
        st.builds(body_bytes, bodies_like(valid), st.booleans()),
        st.builds(body_bytes, json_values, st.booleans()),
        st.binary(max_size=64),
        st.sampled_from([b"", b"\xef\xbb\xbf{}", b"{} trailing", b'{"a": NaN}', b'{"a": -Infinity}',
                         b'{"a": 1,}', b"{'a': 1}", b'{"a": "\\ud800"', b"\xff\xfe{\x00}\x00"]),
        # built when drawn, so the strategy's repr (in Hypothesis' reports) stays short
        st.just(5000).map(unknown_keys),
    )


# --- URLs ----------------------------------------------------------------------------------

# Base URLs a merchant could give to make Paydesk call the host itself or its private network:
# loopback, private, link-local (cloud metadata), carrier-grade NAT, IPv6 forms, and the
# numeric spellings that resolve to 127.0.0.1 (decimal, hex, octal, short).
INTERNAL_BASE_URLS = (
    "http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9", "http://[::ffff:127.0.0.1]:9",
    "http://0.0.0.0:9", "http://10.0.0.1", "http://172.16.0.1", "http://192.168.1.1",
    "http://169.254.169.254/latest/meta-data", "http://100.64.0.1", "http://[fd00::1]",
    "http://[fe80::1]", "http://2130706433:9", "http://0x7f000001:9", "http://017700000001:9",
    "http://127.1:9",
)

def url_quoted(text: str) -> str:
    """Text percent-encoded for a URL; a lone surrogate becomes bytes that are no UTF-8."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


path_segments = st.one_of(hostile_text.map(url_quoted),
                          st.sampled_from(["..", ".", "%2e%2e", "a/b", "%zz", "%", "%ED%A0%80",
                                           "x" * 5000, "SBX-CAPTURED", "SBX-PENDING"]))


@st.composite
def query_strings(draw, names: list[str]) -> str:
    """A query string with the endpoint's own parameters (and others) set to hostile text,
    or broken percent-encoding."""
    names_or_any = st.one_of(st.sampled_from(names), hostile_text) if names else hostile_text
    pairs = draw(st.lists(st.tuples(names_or_any, hostile_text), max_size=4))
    text = "&".join(f"{url_quoted(k)}={url_quoted(v)}" for k, v in pairs)
    return text + draw(st.sampled_from(["", "&", "&%", "&a=%zz", "&a=%ff%fe", "&&=&"]))


# Header values as HTTP carries them: Latin-1, printable or not, but no line breaks.
header_values = st.one_of(
    st.text(st.characters(max_codepoint=255, exclude_characters="\r\n"), max_size=300),
    st.sampled_from(["", " ", "k" * 256, "key\x00", "\x85", "\xff" * 10]),
)
