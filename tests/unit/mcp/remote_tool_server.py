#!/usr/bin/env python3
"""A small streamable-HTTP MCP server for the tests of airlock's MCP proxy
(issue 20, `url:`): a remote server as the proxy meets it.

Prints "PORT n" once listening on 127.0.0.1. Demands "Authorization: Bearer
<token>" (401 otherwise); gives an Mcp-Session-Id at initialize and demands
it afterwards (404 otherwise). tools/call is answered as an SSE stream that
stays open after the response (the client must stop reading on its own);
the rest as application/json. Every request (method, headers that matter,
body) is appended as one JSON line to the log file.

Usage: remote_tool_server.py TOKEN LOG
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN, LOG = sys.argv[1], sys.argv[2]
SESSION = "session-42"
TOOLS = [
    {"name": "echo", "description": "Echoes text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "delete_everything", "description": "Not for agents.", "inputSchema": {"type": "object"}},
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body):
        with open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command,
                                "authorization": self.headers.get("Authorization"),
                                "session": self.headers.get("Mcp-Session-Id"),
                                "version": self.headers.get("MCP-Protocol-Version"),
                                "body": body}) + "\n")

    def reply(self, status, body=b"", ctype="application/json", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.reply(401, b'{"error":"unauthorized"}')
            return False
        return True

    def do_DELETE(self):
        self.record(None)
        if self.authorized():
            self.reply(200 if self.headers.get("Mcp-Session-Id") == SESSION else 404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        self.record(body)
        if not self.authorized():
            return
        msg = json.loads(body)
        method = msg.get("method")
        if method != "initialize" and self.headers.get("Mcp-Session-Id") != SESSION:
            self.reply(404, b'{"error":"no such session"}')
            return
        if "id" not in msg:
            self.reply(202)
            return
        rid = msg["id"]
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "remote-tool-server", "version": "0.1"}}
            self.reply(200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode(),
                       extra={"Mcp-Session-Id": SESSION})
        elif method == "tools/list":
            self.reply(200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}}).encode())
        elif method == "tools/call":
            args = msg["params"].get("arguments", {})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
            self.wfile.write(("event: message\ndata: " + json.dumps(progress) + "\n\n").encode())
            answer = {"jsonrpc": "2.0", "id": rid,
                      "result": {"content": [{"type": "text", "text": "remote echo: " + str(args.get("text"))}]}}
            self.wfile.write(("event: message\r\ndata: " + json.dumps(answer) + "\r\n\r\n").encode())
            self.wfile.flush()
            time.sleep(30)  # the stream stays open: the client ends it
        else:
            self.reply(200, json.dumps({"jsonrpc": "2.0", "id": rid,
                                        "error": {"code": -32601, "message": "no such method"}}).encode())


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print("PORT", server.server_address[1], flush=True)
server.serve_forever()
