#!/usr/bin/env python3
"""A webhook receiver for e2e.test_webhooks: answers POSTs as the mode file says, and logs
every request it gets (before answering) as one JSON line: its webhook-id, -timestamp and
-signature headers, its path, the body, the mode it answered in. Once it has answered, it adds a line
to LOG.done: the id, the path, and when it started and finished (seconds, monotonic), to
check that two requests to one endpoint never overlap.

    webhook_receiver.py PORT LOG MODE_FILE

MODE_FILE holds "ok" (204), "500" (500 with a body), "302" (a redirect to /elsewhere), or
"slow SECONDS" (200 after a sleep); it is read for every request, so the test switches modes
while the receiver runs."""
import http.server
import json
import sys
import time

port, log_path, mode_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        started = time.monotonic()
        self.answering = started
        try:
            self.answer()
        except OSError:  # walklistd gave up on the request (a timeout, SIGKILL)
            pass
        # "end" is when the answer began to go out: the client cannot have had it before.
        with open(log_path + ".done", "a") as done:
            done.write(json.dumps({"id": self.headers.get("webhook-id"), "path": self.path,
                                   "start": started, "end": self.answering}) + "\n")

    def answer(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8", "replace")
        try:
            with open(mode_path) as f:
                mode = f.read().split()
        except OSError:
            mode = ["ok"]
        with open(log_path, "a") as log:
            log.write(json.dumps({
                "id": self.headers.get("webhook-id"),
                "path": self.path,
                "timestamp": self.headers.get("webhook-timestamp"),
                "signature": self.headers.get("webhook-signature"),
                "contentType": self.headers.get("Content-Type"),
                "body": body,
                "mode": mode[0] if mode else "ok",
            }) + "\n")
        if mode and mode[0] == "500":
            self.answering = time.monotonic()
            self.send_response(500)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"oops\n")
            return
        if mode and mode[0] == "302":
            self.answering = time.monotonic()
            self.send_response(302)
            self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode and mode[0] == "slow":
            time.sleep(float(mode[1]))
            self.answering = time.monotonic()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.answering = time.monotonic()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer.allow_reuse_address = True
server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
server.daemon_threads = True
print("listening", flush=True)
server.serve_forever()
