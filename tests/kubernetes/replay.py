"""A tiny HTTP server that replays recorded Kubernetes API responses, in order, to the real client.

Each scripted response is (status, body-lines). Requests are recorded (path + query) so tests can assert
what the client asked for (e.g. the resourceVersion it resumed from). The bodies come from recorded API
responses in fixtures/ (see fixtures/NOTICE.md); only the PodList envelopes are built here.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


class Replay:
    def __init__(self, script: dict[str, list[tuple[int, list[str]]]] | None = None, handler: Any = None):
        """script: {"list": [...], "watch": [...], "GET /api/v1/nodes/x": [...], ...} consumed in order.

        ``handler(request) -> (status, lines)`` answers what the script does not (``cluster_sim`` uses it to
        serve a stateful API server built from recorded objects)."""
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        replay = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # silence
                pass

            def _serve(self, method):
                u = urlparse(self.path)
                q = {k: v[0] for k, v in parse_qs(u.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = {"method": method, "path": u.path, "query": q, "body": body}
                replay.requests.append(req)
                if method == "GET" and u.path.endswith("/pods") and q.get("watch") in ("true", "True", "1"):
                    key = "watch"
                elif method == "GET" and u.path.endswith("/pods"):
                    key = "list"
                else:
                    key = f"{method} {u.path}"
                queue = replay.script.get(key) or []
                if not queue and replay.handler is not None:
                    status, lines = replay.handler(req)
                elif not queue:
                    status, lines = 404, [json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": f"no scripted response for {key}"})]
                else:
                    status, lines = queue.pop(0)
                data = ("\n".join(lines) + "\n").encode()
                self.send_response(status)
                # the API server serves pod logs as text/plain (the client parses application/json bodies)
                ctype = "text/plain" if u.path.endswith("/log") and status == 200 else "application/json"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_DELETE(self):
                self._serve("DELETE")

            def do_PATCH(self):
                self._serve("PATCH")

            def do_PUT(self):
                self._serve("PUT")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, client_address: None  # clients closing watches early
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Replay":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def api_client(self):
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        return client.ApiClient(cfg)

    def core(self):
        from kubernetes import client

        return client.CoreV1Api(self.api_client())


def pod_list(items: list[dict[str, Any]], rv: str) -> str:
    return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": items})


def event(etype: str, obj: dict[str, Any]) -> str:
    return json.dumps({"type": etype, "object": obj})
