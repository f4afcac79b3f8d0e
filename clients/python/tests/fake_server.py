"""A scripted HTTP server on 127.0.0.1 for what the real one cannot be made to do on demand
(a 503 with Retry-After, a search answer of a newer server): it answers each request with the
next scripted response and records what it received."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

Scripted = Tuple[int, Dict[str, str], Any]  # status, headers, JSON body


class Received:
    def __init__(self, method: str, path: str, body: Any, at: float) -> None:
        self.method, self.path, self.body, self.at = method, path, body, at


class FakeServer:
    def __init__(self, script: List[Scripted], default: Optional[Scripted] = None) -> None:
        self.script = list(script)
        self.default = default
        self.received: List[Received] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                fake.received.append(Received(self.command, self.path, body, time.monotonic()))
                status, headers, payload = fake.script.pop(0) if fake.script else fake.default  # type: ignore[misc]
                data = json.dumps(payload).encode()
                self.send_response(status)
                ctype = "application/problem+json" if status >= 400 else "application/json"
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def problem(status: int, code: str, detail: str = "scripted") -> Dict[str, Any]:
    return {"type": f"https://vss.dev/problems/{code}", "title": code, "status": status, "detail": detail, "code": code}
