"""A recording HTTP forwarder for tests: what an attacker on the network between two hoard
nodes sees. It listens on a loopback port, forwards each request it reads to `upstream`
(host, port) and the answer back, and keeps every request as sent (raw bytes and parsed).
`tamper(req) -> bytes or None` may rewrite a request in flight (None: forward as is), and
`tamper_answer(req, status, head, body) -> bytes or None` its answer.

HTTP/1.1 with keep-alive, one request at a time per connection (what libcurl sends);
bodies framed by Content-Length or chunked."""

import socket
import threading


class Request:
    def __init__(self, raw, head, body):
        self.raw = raw
        lines = head.decode("latin-1").split("\r\n")
        self.method, self.target, _ = lines[0].split(" ", 2)
        self.path = self.target.split("?", 1)[0]
        self.headers = []
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                self.headers.append((k.strip(), v.strip()))
        self.body = body

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def rebuild(self, body=None, headers=None, target=None):
        """The same request with another body and/or headers (Content-Length fixed)."""
        body = self.body if body is None else body
        hs = [(k, v) for k, v in (headers if headers is not None else self.headers)
              if k.lower() not in ("content-length", "transfer-encoding")]
        hs.append(("Content-Length", str(len(body))))
        head = "%s %s HTTP/1.1\r\n" % (self.method, target or self.target)
        head += "".join("%s: %s\r\n" % kv for kv in hs) + "\r\n"
        return head.encode("latin-1") + body

    def __repr__(self):
        return "<%s %s %d bytes>" % (self.method, self.target, len(self.body))


def _read_until(sock, buf, sep):
    while sep not in buf:
        got = sock.recv(65536)
        if not got:
            return None, buf
        buf += got
    i = buf.index(sep) + len(sep)
    return buf[:i], buf[i:]


def _read_n(sock, buf, n):
    while len(buf) < n:
        got = sock.recv(65536)
        if not got:
            raise ConnectionError("short body")
        buf += got
    return buf[:n], buf[n:]


def _read_chunked(sock, buf):
    raw, body = b"", b""
    while True:
        line, buf = _read_until(sock, buf, b"\r\n")
        if line is None:
            raise ConnectionError("short chunk")
        raw += line
        size = int(line.split(b";")[0].strip(), 16)
        if size == 0:
            while True:  # trailers up to an empty line
                t, buf = _read_until(sock, buf, b"\r\n")
                raw += t
                if t == b"\r\n":
                    return raw, body, buf
        data, buf = _read_n(sock, buf, size + 2)
        raw += data
        body += data[:-2]


def _read_message(sock, buf, request, method=None):
    """(raw, head, body, rest) of one message, or None at a clean end of stream."""
    head, buf = _read_until(sock, buf, b"\r\n\r\n")
    if head is None:
        return None
    lower = head.lower()
    status = None
    if not request:
        status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in lower:
        raw, body, buf = _read_chunked(sock, buf)
        return head + raw, head, body, buf
    n = 0
    for line in lower.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            n = int(line.split(b":", 1)[1])
    if not request and (method == "HEAD" or status in (204, 304) or 100 <= status < 200):
        n = 0
    body, buf = _read_n(sock, buf, n)
    return head + body, head, body, buf


class Recorder:
    def __init__(self, upstream=None):
        self.upstream = upstream  # (host, port); may be set after start
        self.requests = []
        self.tamper = None
        self.tamper_answer = None
        self._lock = threading.Lock()
        self._srv = socket.socket()
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(64)
        self.port = self._srv.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def captured(self, method, path_prefix):
        with self._lock:
            return [r for r in self.requests
                    if r.method == method and r.path.startswith(path_prefix)]

    def close(self):
        self._stop = True
        try:
            self._srv.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not)
        except OSError:
            pass
        try:
            self._srv.close()
        except OSError:
            pass

    def _accept(self):
        while not self._stop:
            try:
                c, _ = self._srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        up = None
        cbuf = ubuf = b""
        try:
            while True:
                m = _read_message(c, cbuf, True)
                if m is None:
                    return
                raw, head, body, cbuf = m
                req = Request(raw, head, body)
                with self._lock:
                    self.requests.append(req)
                out = raw
                if self.tamper:
                    t = self.tamper(req)
                    if t is not None:
                        out = t
                if up is None:
                    up = socket.create_connection(self.upstream, timeout=60)
                up.sendall(out)
                r = _read_message(up, ubuf, False, req.method)
                if r is None:
                    return
                answer = r[0]
                if self.tamper_answer:
                    status = int(r[1].split(b" ", 2)[1])
                    t = self.tamper_answer(req, status, r[1], r[2])
                    if t is not None:
                        answer = t
                c.sendall(answer)
                ubuf = r[3]
        except (OSError, ConnectionError, ValueError):
            return
        finally:
            c.close()
            if up:
                up.close()


def send_raw(url, data, timeout=10):
    """Sends raw request bytes to url's host:port; returns (status, body)."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    s = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        s.sendall(data)
        m = _read_message(s, b"", False)
        if m is None:
            return None, b""
        return int(m[1].split(b" ", 2)[1]), m[2]
    finally:
        s.close()
