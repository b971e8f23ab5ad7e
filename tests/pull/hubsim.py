"""hubsim.py — a loopback imitation of the Hugging Face hub for `jepa pull` and
jepa.pull() (tests/pull/test_pull.py, tests/python/test_pull.py), standard library only.

It answers as the hub does (huggingface_hub's file_download.py is the reference):
  HEAD/GET /{owner}/{name}/resolve/main/{file}  302 to /cdn/{key} with X-Linked-Etag
      ("sha256"), X-Linked-Size and X-Repo-Commit; 404 with X-Error-Code for a missing file
  GET /api/models/{owner}/{name}                {"id", "siblings": [{"rfilename"}]}; 404
  GET /cdn/{key}                                the bytes, Range requests answered 206
Each file may misbehave on purpose (Hub.add's mode): "truncate" (the first GET sends half
of the body and closes), "badsha" (the announced sha256 is wrong), "slow" (the GET sends
a few bytes and stalls), "flaky" (the first two GETs answer 503); "plain" is a file not
stored with LFS (config.json): the resolve URL answers 200 itself, with the git blob id as
its ETag and no X-Linked-* headers. add_checkpoint serves a Hugging Face model folder (its
JSON files plain, its safetensors with LFS). Every request is logged
as (method, path, Range header) in Hub.log.
"""
import hashlib
import http.server
import json
import os
import threading
import time
import urllib.parse


class Hub:
    def __init__(self):
        self.repos = {}      # "owner/name" -> {file: (bytes, mode)}
        self.log = []
        self.gets = {}       # cdn key -> GETs so far
        self.lock = threading.Lock()
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                hub._serve(self, head=True)

            def do_GET(self):
                hub._serve(self, head=False)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def add(self, repo, name, data, mode=None):
        self.repos.setdefault(repo, {})[name] = (data, mode)

    def add_checkpoint(self, repo, folder, mode=None):
        for name in sorted(os.listdir(folder)):
            data = open(os.path.join(folder, name), "rb").read()
            self.add(repo, name, data, "plain" if name.endswith(".json") else mode)

    def requests(self, method=None, prefix=""):
        with self.lock:
            return [r for r in self.log if (method is None or r[0] == method) and r[1].startswith(prefix)]

    # ---- answers ----

    def _find(self, key):
        for repo, files in self.repos.items():
            for name, (data, mode) in files.items():
                if hashlib.sha256((repo + "/" + name).encode()).hexdigest()[:24] == key:
                    return name, data, mode
        return None

    def _serve(self, h, head):
        with self.lock:
            self.log.append(("HEAD" if head else "GET", h.path, h.headers.get("Range")))
        path = urllib.parse.unquote(urllib.parse.urlsplit(h.path).path)
        parts = path.strip("/").split("/")
        if len(parts) >= 3 and parts[0] == "api" and parts[1] == "models":
            return self._listing("/".join(parts[2:]), h)
        if len(parts) >= 5 and parts[2] == "resolve" and parts[3] == "main":
            return self._resolve("/".join(parts[:2]), "/".join(parts[4:]), h)
        if len(parts) == 2 and parts[0] == "cdn":
            return self._cdn(parts[1], h, head)
        self._send(h, 404, b"not found")

    def _send(self, h, status, body, headers=(), head=False):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _listing(self, repo, h):
        if repo not in self.repos:
            return self._send(h, 404, b'{"error":"Repository not found"}', [("X-Error-Code", "RepoNotFound")])
        body = json.dumps({"id": repo, "sha": "0" * 40,
                           "siblings": [{"rfilename": n} for n in sorted(self.repos[repo])] +
                                       [{"rfilename": "README.md"}]}).encode()
        self._send(h, 200, body, [("Content-Type", "application/json")])

    def _resolve(self, repo, name, h):
        files = self.repos.get(repo, {})
        if name not in files:
            return self._send(h, 404, b"Entry not found", [("X-Error-Code", "EntryNotFound"),
                                                            ("X-Repo-Commit", "0" * 40)], head=True)
        data, mode = files[name]
        if mode == "plain":
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            return self._send(h, 200, data, [("ETag", '"%s"' % blob), ("X-Repo-Commit", "0" * 40)],
                              head=h.command == "HEAD")
        sha = hashlib.sha256(data).hexdigest()
        if mode == "badsha":
            sha = hashlib.sha256(data + b"x").hexdigest()
        key = hashlib.sha256((repo + "/" + name).encode()).hexdigest()[:24]
        self._send(h, 302, b"", [("Location", self.url + "/cdn/" + key), ("X-Linked-Etag", '"%s"' % sha),
                                 ("X-Linked-Size", str(len(data))), ("ETag", '"%s"' % ("1" * 40)),
                                 ("X-Repo-Commit", "0" * 40)], head=True)

    def _cdn(self, key, h, head):
        found = self._find(key)
        if not found:
            return self._send(h, 404, b"no such blob", head=head)
        name, data, mode = found
        with self.lock:
            n_get = self.gets[key] = self.gets.get(key, 0) + (0 if head else 1)
        if mode == "flaky" and n_get <= 2:
            return self._send(h, 503, b"busy", head=head)
        start = 0
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
        if start >= len(data) and len(data):
            return self._send(h, 416, b"", [("Content-Range", "bytes */%d" % len(data))], head=head)
        body = data[start:]
        h.send_response(206 if rng else 200)
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(body)))
        if rng:
            h.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        h.end_headers()
        if head:
            return
        if mode == "truncate" and n_get == 1:
            h.wfile.write(body[:len(body) // 2])
            h.wfile.flush()
            h.close_connection = True
            return
        if mode == "slow":
            h.wfile.write(body[:16])
            h.wfile.flush()
            time.sleep(6)
            h.close_connection = True
            return
        h.wfile.write(body)
