"""Reading a request body with a size limit enforced while it arrives.

A declared ``Content-Length`` above the limit is refused before a byte of the
body is read; a body without one (chunked) is refused as soon as the bytes
received pass the limit. Either way the rest is never read.
"""

from __future__ import annotations

from starlette.requests import Request


class BodyTooLarge(Exception):
    def __init__(self, limit: int, seen: int, declared: bool) -> None:
        how = "declared Content-Length" if declared else "received so far"
        super().__init__(f"body is larger than max_body_bytes={limit} ({how}: {seen})")
        self.limit = limit


class BadContentLength(Exception):
    pass


async def read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit():
            raise BadContentLength(f"Content-Length={declared[:30]!r} is not a number")
        if int(declared) > limit:
            raise BodyTooLarge(limit, int(declared), declared=True)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(limit, len(body), declared=False)
    return bytes(body)


async def drain(request: Request, cap: int) -> bool:
    """Read and drop a body of at most ``cap`` bytes; False if it is larger (left unread).

    Answering before the body is read makes the server close the connection,
    and a close with unread bytes resets it, which can destroy the answer on
    its way to the client. A small body is cheaper to read than to lose the answer.
    """
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > cap):
        return False
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > cap:
            return False
    return True
