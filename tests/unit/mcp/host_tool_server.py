#!/usr/bin/env python3
"""A small stdio MCP server for the tests of airlock's MCP proxy (issue 20).

Tools: `echo` (returns its `text`), `host_secret` (returns the content of the
file named by HOST_SECRET_FILE: what a tool the allowlist leaves out could
leak). Every message it receives is appended, one JSON line each, to the file
named by MCP_TEST_LOG; its pid is written to MCP_TEST_PID. With
MCP_TEST_ASK_ROOTS=1 it asks the client for roots/list before answering a
tools/call (the proxy must answer that itself); with MCP_TEST_BAD_ERROR=1 it
answers echo with an error that is not a JSON-RPC error object.
"""
import json
import os
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    if os.environ.get("MCP_TEST_PID"):
        with open(os.environ["MCP_TEST_PID"], "w") as f:
            f.write(str(os.getpid()))
    log = os.environ.get("MCP_TEST_LOG")
    tools = [
        {"name": "echo", "description": "Echoes text.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
        {"name": "host_secret", "description": "Reads a file of the host.",
         "inputSchema": {"type": "object", "properties": {}}},
    ]
    for line in sys.stdin:
        msg = json.loads(line)
        if log:
            with open(log, "a") as f:
                f.write(json.dumps(msg) + "\n")
        method = msg.get("method")
        if "id" not in msg or method is None:
            continue
        rid = msg["id"]
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "host-tool-server", "version": "0.1"},
                "instructions": "Test tools."}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        elif method == "tools/call":
            if os.environ.get("MCP_TEST_ASK_ROOTS") == "1":
                send({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
                answer = json.loads(sys.stdin.readline())
                if log:
                    with open(log, "a") as f:
                        f.write(json.dumps(answer) + "\n")
            name = msg["params"]["name"]
            args = msg["params"].get("arguments", {})
            if name == "echo" and os.environ.get("MCP_TEST_BAD_ERROR") == "1":
                send({"jsonrpc": "2.0", "id": rid, "error": "oops"})
                continue
            if name == "echo":
                text = "echo: " + str(args.get("text", ""))
            elif name == "host_secret":
                with open(os.environ["HOST_SECRET_FILE"]) as f:
                    text = f.read()
            else:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool"}})
                continue
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
        elif method == "resources/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"resources": [{"uri": "file:///etc/passwd", "name": "p"}]}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
