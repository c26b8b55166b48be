"""Request body limit as a plain ASGI middleware.

A body over ``max_body`` bytes is refused with ``413`` and
``{"error": "..."}`` before the application sees it: at once when
``Content-Length`` says so, else as soon as the streamed bytes exceed it.
"""
from __future__ import annotations

import json


async def _send_error(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


#: Bytes of an oversized body read and discarded before answering 413, so
#: that a client still sending gets the answer instead of a reset connection.
DRAIN_LIMIT = 64 * 1024 * 1024


class BodyLimit:
    """Refuse request bodies larger than ``max_body`` bytes (413)."""

    def __init__(self, app, max_body: int):
        self.app = app
        self.max_body = int(max_body)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    return await _send_error(send, 400, "malformed Content-Length header")
        chunks, size, more = [], 0, True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return None
            body = msg.get("body", b"")
            size += len(body)
            more = msg.get("more_body", False)
            if size > self.max_body or (declared or 0) > self.max_body:
                return await self._refuse(receive, send, more, size)
            chunks.append(body)
        data = b"".join(chunks)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": data, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    async def _refuse(self, receive, send, more: bool, size: int) -> None:
        while more and size <= DRAIN_LIMIT:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return None
            size += len(msg.get("body", b""))
            more = msg.get("more_body", False)
        await _send_error(send, 413, f"request body over {self.max_body} bytes (the service's "
                                     f"--max-body)")


__all__ = ["BodyLimit"]
