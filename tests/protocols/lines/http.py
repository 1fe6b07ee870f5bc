"""``lines`` over HTTP: ``POST <mount> {"prompt": "…"}``, answered 200 with the stream."""

from __future__ import annotations

from msgspec import Struct

from streambridge.codecs.http import HttpSurface
from streambridge.codecs.requests import ChatRequest, decode_request, encode_request

__all__ = ["SURFACE"]


class Prompt(Struct):
    prompt: str


def parse_request(body: bytes) -> ChatRequest:
    return ChatRequest(text=decode_request(body, Prompt, "lines request").prompt)


def build_request(req: ChatRequest) -> bytes:
    return encode_request(Prompt(prompt=req.text))


SURFACE = HttpSurface(
    chat_path="",
    chat_status=200,
    control_path="tool-call/{decision}",
    control_status=200,
    parse_request=parse_request,
    build_request=build_request,
)
