"""What a request to the plugin's web service carries: its body, read with a size limit and parsed with a bound on
nesting, and the address of its client.

A body over the configured limit (declared or streamed) raises ``BodyTooLarge`` (answered 413 by ``service.py``);
malformed JSON, or arrays and objects nested deeper than ``MAX_JSON_DEPTH``, a ``PayloadError`` (400). Bodies larger
than ``PARSE_INLINE_BYTES`` are parsed in a thread, so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from starlette.requests import Request

from easl_toolkit.easl_plugin.events import PayloadError

MAX_JSON_DEPTH = 64  #: deepest nesting of arrays and objects accepted in a body (Label Studio's: < 10)
PARSE_INLINE_BYTES = 64 * 1024  #: larger bodies are parsed in a thread, so the event loop stays free
T = TypeVar("T")


class BodyTooLarge(Exception):
    """A request body over the configured limit (answered with 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"body larger than {limit} bytes")
        self.limit = limit


def client_address(scope: Mapping[str, Any]) -> str:
    """The client's address of an ASGI ``scope`` (``"unknown"`` when the server does not give it)."""
    return (scope.get("client") or ("", 0))[0] or "unknown"


async def read_body(request: Request, limit: int) -> bytes:
    """The request body; raises ``BodyTooLarge`` as soon as it (or its declared length) exceeds ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and (
        not (declared.isascii() and declared.isdigit()) or len(declared) > 19 or int(declared) > limit
    ):
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _depth_ok(value, limit: int) -> bool:
    """Whether arrays and objects in ``value`` nest at most ``limit`` deep (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        if d > limit:
            return False
        stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return True


def _bounded(parse: Callable[[bytes], T], raw: bytes) -> T:
    """``parse(raw)`` with the nesting depth bounded: deeper bodies are a ``PayloadError``, never a
    RecursionError (the parser's own recursion limit) nor a value that later code cannot walk."""
    too_deep = PayloadError(f"malformed JSON: nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    try:
        value = parse(raw)
    except RecursionError:
        raise too_deep from None
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and not _depth_ok(value, MAX_JSON_DEPTH):
        raise too_deep
    return value


async def parse_body(parse: Callable[[bytes], T], raw: bytes) -> T:
    """``_bounded(parse, raw)``, in a worker thread for large bodies."""
    if len(raw) > PARSE_INLINE_BYTES:
        return await asyncio.to_thread(_bounded, parse, raw)
    return _bounded(parse, raw)


def load_json(raw: bytes) -> object:
    """A JSON body (an empty body is ``{}``); malformed JSON is a ``PayloadError``."""
    try:
        return json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError(f"malformed JSON: {exc}") from None
