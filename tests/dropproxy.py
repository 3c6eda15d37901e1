"""A TCP proxy in front of a real server that drops connections when told: after a given
number of bytes from the client (in the middle of a request body, as a connection lost
mid-upload), or all at once while the network is "down" (every connection closed, new
ones closed on arrival). The resumable upload tests (tests/client/) and
bench/resumable_upload.py put it between the client and the site."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading


class DropProxy:
    """Forwards 127.0.0.1:<port> to ``upstream`` (host, port), byte for byte."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.live: set[socket.socket] = set()
        self.budget: int | None = None  # client bytes to pass before the next cut
        self.down = False
        self.cuts = 0
        self.forwarded = 0  # client bytes passed on, in all
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut_after(self, n_bytes: int) -> None:
        """Cut the connection that carries the client's ``n_bytes``-th byte from now: the
        server gets the bytes before it, then the end of the stream; the client, a reset."""
        with self.lock:
            self.budget = n_bytes

    def go_down(self) -> None:
        """Close every connection, and each new one as it arrives, until :meth:`go_up`."""
        with self.lock:
            self.down = True
            for sock in list(self.live):
                _reset(sock)
            self.live.clear()

    def go_up(self) -> None:
        with self.lock:
            self.down = False

    def close(self) -> None:
        self.go_down()
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            with self.lock:
                if self.down:
                    _reset(client)
                    continue
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                _reset(client)
                continue
            with self.lock:
                self.live |= {client, server}
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, upstream: bool) -> None:
        try:
            while data := source.recv(65536):
                cut = False
                if upstream:
                    with self.lock:
                        if self.budget is not None and len(data) >= self.budget:
                            data, cut = data[: self.budget], True
                            self.budget = None
                            self.cuts += 1
                        elif self.budget is not None:
                            self.budget -= len(data)
                        self.forwarded += len(data)
                target.sendall(data)
                if cut:
                    target.shutdown(socket.SHUT_WR)  # the server reads what came, then the end
                    _reset(source)
                    return
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                target.shutdown(socket.SHUT_WR)
            if not upstream:  # the server's side ended: the connection is over
                with self.lock:
                    self.live.discard(source)
                    self.live.discard(target)
                source.close()
                target.close()


def _reset(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), as a dropped connection looks to its peer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()
