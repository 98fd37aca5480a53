"""A small JSON header plus file descriptors over a Unix socket: how handles travel between processes."""

from __future__ import annotations

import json
import os
import socket
import struct

MAX_HEADER = 4096


def send_with_fds(sock: socket.socket, header: dict, fds: list[int]) -> None:
    """Send `header` as length-prefixed JSON with `fds` attached to its first byte."""
    body = json.dumps(header).encode()
    message = struct.pack("<I", len(body)) + body
    sent = socket.send_fds(sock, [message], fds)
    # Stream sockets may take the message in pieces; the fds travel with the first byte.
    if sent < len(message):
        sock.sendall(message[sent:])


def _recv_exact(sock: socket.socket, n: int, what: str) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError(f"connection closed in the middle of a {what}")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_with_fds(sock: socket.socket, n_fds: int, what: str) -> tuple[dict, list[int]]:
    """Receive a message sent with send_with_fds carrying exactly `n_fds` fds; ConnectionError otherwise.

    On error every received fd is closed; on success the caller owns them.
    """
    stream = sock.type == socket.SOCK_STREAM
    # On a stream read only the length first; datagram and seqpacket messages must be read whole.
    data, fds, _flags, _addr = socket.recv_fds(sock, 4 if stream else 4 + MAX_HEADER, n_fds)
    try:
        if len(fds) != n_fds:
            raise ConnectionError(f"expected {n_fds} fd(s) with a {what}, got {len(fds)}")
        if len(data) < 4:
            if not stream:
                raise ConnectionError(f"{what} message of {len(data)} bytes is too short")
            data += _recv_exact(sock, 4 - len(data), what)
        (length,) = struct.unpack_from("<I", data)
        if length > MAX_HEADER:
            raise ConnectionError(f"{what} header of {length} bytes is too long")
        body = _recv_exact(sock, length, what) if stream else data[4 : 4 + length]
        return json.loads(body), fds
    except BaseException:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        raise
