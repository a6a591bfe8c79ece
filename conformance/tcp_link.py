"""A TCP relay between a client and a server, for tests that need a link that is slow, or that fails at a chosen
byte: the e2e push tests (a slow link interrupted mid-push, a video cut mid-file) and the browser's cut uploads.

    link = Link(server_port)                                  # passes everything
    link = Link(server_port, rate=2_000_000)                  # at most 2 MB/s towards the server
    link = Link(server_port, cut=AppendCut(after=n))          # drops the connection carrying an append at byte n
    link = Link(server_port, cut=AppendCut(after=n, hold=True))  # ... or holds it: bytes past n go nowhere

Clients connect to `http://127.0.0.1:{link.port}`.
"""
import socket
import threading
import time

# The request line of a resumable append (`PUT /_photos/api/db/{db}/uploads/{id}`), the gallery's and `push`'s.
APPEND = b"PUT /_photos/api/"


class AppendCut:
    """Decides, chunk by chunk of what a client sends, where the link fails: once, on the connection carrying a
    resumable append, after `after` bytes of that connection's traffic from the append's request line on.

    A cut closes the connection (the sender's writes fail at once, as when a link drops); with `hold` it stays
    open instead and what the client sends past the byte is read and thrown away, so the client believes it is
    still sending while the server waits for bytes that never come — until the client gives up (a page reload).
    `done` is set at the moment of the cut."""

    def __init__(self, after: int, hold: bool = False):
        self.after, self.hold = after, hold
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.appended = 0  # bytes passed on, on every connection that carried an append, from its request line on

    def split(self, state: dict, chunk: bytes) -> tuple[bytes, bool]:
        """What of `chunk` to pass on, and whether the link fails after it; `state` is the connection's own."""
        before = b""
        if "counted" not in state:
            tail = state.get("tail", b"")
            start = (tail + chunk).find(APPEND)
            if start < 0:
                state["tail"] = (tail + chunk)[-len(APPEND):]
                return chunk, False
            # The count starts at the request line, which may have begun in the previous chunk.
            begin = max(start - len(tail), 0)
            before, chunk = chunk[:begin], chunk[begin:]
            state["counted"] = max(len(tail) - start, 0)
            with self.lock:
                self.appended += state["counted"]
        with self.lock:
            failing = not self.done.is_set() and state["counted"] + len(chunk) > self.after
            if failing:
                chunk = chunk[:max(self.after - state["counted"], 0)]
                self.done.set()
            state["counted"] += len(chunk)
            self.appended += len(chunk)
        return before + chunk, failing


class Link:
    """Relays each connection to 127.0.0.1:`port` with a thread per direction (see the module's doc)."""

    def __init__(self, port: int, rate: int | None = None, cut: AppendCut | None = None):
        self.upstream_port, self.rate, self.cut_rule = port, rate, cut
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self.open += [client, upstream]
            threading.Thread(target=self._towards_server, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _towards_server(self, client, upstream):
        state: dict = {}
        try:
            while chunk := client.recv(65536):
                if self.rate:
                    time.sleep(len(chunk) / self.rate)
                failing = False
                if self.cut_rule:
                    chunk, failing = self.cut_rule.split(state, chunk)
                upstream.sendall(chunk)
                if failing:
                    if self.cut_rule.hold:
                        while client.recv(65536):
                            pass  # thrown away until the client gives up
                    return
        except OSError:
            pass
        finally:
            self._close(client, upstream)

    def _pipe(self, source, sink):
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            self._close(source, sink)

    @staticmethod
    def _close(*sockets):
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def cut(self):
        """Drops every open connection and what it still holds, as a link that fails."""
        for s in self.open:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.open.clear()

    def close(self):
        self.cut()
        self.listener.close()
