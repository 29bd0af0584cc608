#!/usr/bin/env python3
"""Scripted mock model server for airlock's end-to-end tests.

One process, one port, four model APIs (routed by path):

  POST /v1/messages                       Anthropic Messages (SSE or JSON)   -> Claude Code
  POST /v1/messages/count_tokens          Anthropic token count
  POST /v1/responses                      OpenAI Responses (SSE or JSON)     -> Codex
  POST /v1beta/models/<m>:generateContent        Gemini (JSON)               -> Gemini CLI
  POST /v1beta/models/<m>:streamGenerateContent  Gemini (SSE with ?alt=sse)
  POST /v1beta/models/<m>:countTokens            Gemini token count
  POST /v1/chat/completions               OpenAI chat completions (SSE/JSON) -> OpenCode
  GET  /v1/models                         a one-model list
  POST /v1internal:<method>               Gemini Code Assist (a Google login; Gemini CLI with
                                          CODE_ASSIST_ENDPOINT): loadCodeAssist (a standard tier
                                          and project), generateContent, streamGenerateContent
                                          (?alt=sse), countTokens; answers wrapped {"response": ...};
                                          other methods answer {}
  POST /v1/oauth/token                    OAuth refresh (Claude's platform.claude.com): new
                                          access and refresh tokens, "sk-ant-oat01-rotated-<hex>"
  POST /v1/oauth/token, authorization_code  Claude's login (`claude auth login`, code pasted
                                          as "FAKE-CLAUDE-CODE#<state>"): "sk-ant-oat01-login-<hex>"
                                          and "sk-ant-ort01-login-<hex>", account login@example.com
  GET  /api/oauth/profile                 that account in a Max organization
  GET  /api/oauth/claude_cli/roles        its roles (admin of "Login Org")
  POST /backend-api/codex/responses       Codex on a ChatGPT login (Responses API; zstd bodies)
  GET  /backend-api/codex/models          {"models": []}
  GET  /backend-api/wham/accounts/check   the account named by the chatgpt-account-id header
  GET  /backend-api/wham/settings/user    {}
  POST /oauth/token                       OAuth refresh (Codex's auth.openai.com, JSON): a new
                                          access JWT (exp in an hour, "rotated": "<hex>"),
                                          refresh token "rt_rotated-<hex>" and id token
  POST /api/accounts/deviceauth/usercode  ChatGPT's device-code login (auth.openai.com): device
                                          "dev-FAKE-1", code "FAKE-1234", interval "1"
  POST /api/accounts/deviceauth/token     403 (pending) at the first poll, then the
                                          authorization code and its PKCE verifier
  POST /oauth/token, authorization_code   that code exchanged: an id token (device@example.com,
                                          account acct-DEVICE-1, plan plus), an access JWT and
                                          refresh token "rt_device-<hex>"
  POST /token                             OAuth refresh (Google's oauth2.googleapis.com, form-
                                          encoded): a new access token "ya29.rotated-<hex>", no
                                          new refresh token
  POST /token, authorization_code         Gemini's login (code pasted as "FAKE-GOOGLE-CODE"):
                                          "ya29.login-<hex>" and refresh token "1//login-<hex>"
  GET  /oauth2/v2/userinfo                who that is: user@example.com
  HEAD anything, GET /                    200, empty; any other path: 404

--reject-first-bearer answers the first model request with 401 (an access
token the API stopped taking), whatever its Authorization header;
--refuse-refresh answers every refresh with 400 invalid_grant.

The "model" follows a JSON scenario (--scenario FILE):

  {
    "workdir": "/workspace",            # fallback when the request does not name it
    "final_text": "Done.",              # reply after the last step
    "steps": [
      {"write": {"path": "NEW.md", "content": "hello\\n"}},
      {"shell": "printf 'x\\n' >> README.md"},
      {"shell": "rm old.txt"},
      {"shell": "ls -la", "expect_in_result_not": ".env", "expect_in_result": "README.md"},
      {"tool": "mcp__fs__list_directory", "input": {"path": "/workspace"},
       "expect_in_result": "README.md"}
    ]
  }

A "tool" step calls the tool of that exact name with "input" as its
arguments (an MCP server's tool, as the agent names it); an agent that does
not offer it gets the "no usable tool" error below.

Any step may also carry "delay": SECONDS and/or "wait_for_file": PATH (relative
to --gate-dir; "wait_timeout": SECONDS, default 120): the answer that asks for
that step is held until then (a "hold" line is logged first), so a test can
change the host project while the agent is mid-session. "final_delay",
"final_wait_for_file" and "final_wait_timeout" at the top level hold the final
answer the same way.

A bare JSON list is taken as "steps". Each step is one tool call the model asks
the agent to make, using the tool the agent itself offers in the request
(Claude: Write/Bash, Codex: apply_patch/exec_command/shell, Gemini:
write_file/run_shell_command, OpenCode: write/bash). Relative paths of "write"
steps are joined to the agent's working directory, which is read from the
request (Claude's "Primary working directory: ...", Codex's <cwd>...</cwd>,
"Working directory: ..." and the like), else the scenario's "workdir", else
/workspace.

Stateless per request: the next step is the number of tool results already in
the conversation, so retries get the same answer. Requests that offer no tools
(titles, classifiers, summaries) get a short text or JSON answer and do not
advance the script.

Every request appends one JSON line to --log FILE: the path, API, model,
request kind, step index, the action answered, the tool results seen (text cut
to 2000 characters) and "violations" for failed expect_in_result(_not) checks.

Python 3 standard library only; loopback by default.
"""

import argparse
import base64
import ssl
import gzip
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

DEFAULT_WORKDIR = "/workspace"
DEFAULT_FINAL_TEXT = "Done: the scripted changes are complete."
RESULT_LOG_CHARS = 2000

WRITE_TOOL_NAMES = ["Write", "write_file", "write", "create_file"]
SHELL_TOOL_NAMES = ["Bash", "run_shell_command", "bash", "exec_command",
                    "shell_command", "shell"]
PATH_PARAM_NAMES = ["file_path", "filePath", "absolute_path", "path"]
CMD_PARAM_NAMES = ["command", "cmd"]

WORKDIR_PATTERNS = [
    re.compile(r"Primary working directory:\s*(/[^\s`'\"<>]*)"),
    re.compile(r"<cwd>\s*(/[^<\s]*)\s*</cwd>"),
    re.compile(r"Workspace Directories:\**\s*-\s*(/[^\s`'\"<>]*)"),
    re.compile(r"[Ww]orking directory:\s*[`'\"]?(/[^\s`'\"<>]*)"),
    re.compile(r"current working directory(?: is)?:?\s*[`'\"]?(/[^\s`'\"<>]*)", re.I),
    re.compile(r"working in the directory:?\s*[`'\"]?(/[^\s`'\"<>]*)", re.I),
    re.compile(r"\bcwd:\s*(/[^\s`'\"<>]*)"),
]


# --------------------------------------------------------------------------
# scenario


class Scenario:
    def __init__(self, data):
        if isinstance(data, list):
            data = {"steps": data}
        if not isinstance(data, dict):
            raise ValueError("scenario must be a JSON object or list")
        self.steps = data.get("steps", [])
        self.final_text = data.get("final_text", DEFAULT_FINAL_TEXT)
        self.workdir = data.get("workdir")
        self.final_hold = {}
        for k in ("final_delay", "final_wait_for_file", "final_wait_timeout"):
            if k in data:
                self.final_hold[k[len("final_"):]] = data[k]
        for i, st in enumerate(self.steps):
            if not isinstance(st, dict) or not ("write" in st or "shell" in st or "tool" in st):
                raise ValueError("step %d: need a \"write\", \"shell\" or \"tool\" key" % i)
            if "write" in st:
                w = st["write"]
                if not isinstance(w, dict) or "path" not in w or "content" not in w:
                    raise ValueError("step %d: write needs path and content" % i)

    @staticmethod
    def load(path):
        if not path:
            return Scenario({"steps": []})
        with open(path, "r", encoding="utf-8") as f:
            return Scenario(json.load(f))


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


# --------------------------------------------------------------------------
# tools offered by the agent


class Tool:
    def __init__(self, name, schema=None, kind="function"):
        self.name = name
        self.schema = schema if isinstance(schema, dict) else {}
        self.kind = kind  # function | custom

    def props(self):
        p = self.schema.get("properties")
        return p if isinstance(p, dict) else {}

    def required(self):
        r = self.schema.get("required")
        return r if isinstance(r, list) else []


def tools_anthropic(body):
    out = []
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("name") and "input_schema" in t:
            out.append(Tool(t["name"], t.get("input_schema")))
    return out


def tools_responses(body):
    out = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "function" and t.get("name"):
            out.append(Tool(t["name"], t.get("parameters")))
        elif t.get("type") == "custom" and t.get("name"):
            out.append(Tool(t["name"], None, kind="custom"))
    return out


def tools_gemini(body):
    out = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        for fd in t.get("functionDeclarations") or t.get("function_declarations") or []:
            if isinstance(fd, dict) and fd.get("name"):
                schema = fd.get("parametersJsonSchema") or fd.get("parameters")
                out.append(Tool(fd["name"], schema))
    return out


def tools_chat(body):
    out = []
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("type") == "function":
            fn = t.get("function") or {}
            if fn.get("name"):
                out.append(Tool(fn["name"], fn.get("parameters")))
    return out


def find_tool(tools, names):
    by_name = {t.name: t for t in tools}
    for n in names:
        if n in by_name:
            return by_name[n]
    return None


def schema_type(s):
    if not isinstance(s, dict):
        return ""
    t = s.get("type", "")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "")
    return str(t).lower()


def fill_required(tool, args, step_index):
    """Give required parameters we do not know a harmless value."""
    for name in tool.required():
        if name in args:
            continue
        ps = tool.props().get(name, {})
        ty = schema_type(ps)
        if "enum" in ps and ps["enum"]:
            args[name] = ps["enum"][0]
        elif ty in ("integer", "number"):
            args[name] = 0
        elif ty == "boolean":
            args[name] = False
        elif ty == "array":
            args[name] = []
        elif ty == "object":
            args[name] = {}
        else:
            args[name] = "scripted step %d" % (step_index + 1)
    return args


def shell_quote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


class Call:
    """One tool call to send: name plus JSON args, or raw input for custom tools."""

    def __init__(self, tool, args=None, raw=None):
        self.name = tool.name
        self.kind = tool.kind
        self.args = args
        self.raw = raw

    def args_json(self):
        return json.dumps(self.args)

    def describe(self):
        return {"tool": self.name, "kind": self.kind,
                "input": self.raw if self.kind == "custom" else self.args}


def shell_call(tool, command, step_index, workdir):
    props = tool.props()
    key = next((k for k in CMD_PARAM_NAMES if k in props), "command")
    if schema_type(props.get(key)) == "array":
        value = ["bash", "-lc", command]
    else:
        value = command
    args = {key: value}
    if "description" in props:
        args["description"] = "scripted step %d" % (step_index + 1)
    if tool.name in ("shell", "shell_command") and "workdir" in props and workdir:
        args["workdir"] = workdir
    return Call(tool, fill_required(tool, args, step_index))


def make_call(step, step_index, tools, workdir):
    """Map a scenario step onto one of the tools the agent offers."""
    if "tool" in step:
        named = find_tool(tools, [step["tool"]])
        if named is None:
            return None
        return Call(named, fill_required(named, dict(step.get("input", {})), step_index))
    shell = find_tool(tools, SHELL_TOOL_NAMES)
    if "write" in step:
        path = step["write"]["path"]
        content = step["write"]["content"]
        abspath = path if path.startswith("/") else workdir.rstrip("/") + "/" + path
        wt = find_tool(tools, WRITE_TOOL_NAMES)
        if wt is not None:
            props = wt.props()
            key = next((k for k in PATH_PARAM_NAMES if k in props), "file_path")
            args = {key: abspath, "content": content}
            return Call(wt, fill_required(wt, args, step_index))
        patch = find_tool(tools, ["apply_patch"])
        if patch is not None and content.endswith("\n"):
            lines = content[:-1].split("\n")
            body = "".join("+" + ln + "\n" for ln in lines)
            text = "*** Begin Patch\n*** Add File: %s\n%s*** End Patch\n" % (abspath, body)
            if patch.kind == "custom":
                return Call(patch, raw=text)
            props = patch.props()
            key = "input" if "input" in props or not props else next(iter(props))
            return Call(patch, {key: text})
        if shell is None:
            return None
        cmd = "printf '%%s' %s > %s" % (shell_quote(content), shell_quote(abspath))
        return shell_call(shell, cmd, step_index, workdir)
    if shell is None:
        return None
    return shell_call(shell, step["shell"], step_index, workdir)


# --------------------------------------------------------------------------
# reading a conversation


def all_strings(obj, out):
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            all_strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            all_strings(v, out)
    return out


def detect_workdir(body):
    strings = all_strings(body, [])
    for pat in WORKDIR_PATTERNS:
        for s in strings:
            m = pat.search(s)
            if m:
                return m.group(1).rstrip(".,;:)]")
    return None


def text_of(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if isinstance(c.get("text"), str):
                    parts.append(c["text"])
                elif "content" in c:
                    parts.append(text_of(c["content"]))
            elif isinstance(c, str):
                parts.append(c)
        return "\n".join(parts)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        return json.dumps(content)
    return str(content)


def results_anthropic(body):
    out = []
    for m in body.get("messages") or []:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, list):
            for b in c:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    out.append({"text": text_of(b.get("content")),
                                "is_error": bool(b.get("is_error"))})
    return out


def results_responses(body):
    out = []
    inp = body.get("input")
    for it in inp if isinstance(inp, list) else []:
        if isinstance(it, dict) and it.get("type") in (
                "function_call_output", "custom_tool_call_output",
                "local_shell_call_output"):
            out.append({"text": text_of(it.get("output")), "is_error": False})
    return out


def results_gemini(body):
    out = []
    for c in body.get("contents") or []:
        for p in (c.get("parts") or []) if isinstance(c, dict) else []:
            fr = p.get("functionResponse") if isinstance(p, dict) else None
            if isinstance(fr, dict):
                r = fr.get("response")
                if isinstance(r, dict) and isinstance(r.get("output"), str):
                    txt = r["output"]
                else:
                    txt = json.dumps(r)
                out.append({"text": txt,
                            "is_error": isinstance(r, dict) and "error" in r})
    return out


def results_chat(body):
    out = []
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "tool":
            out.append({"text": text_of(m.get("content")), "is_error": False})
    return out


def check_expectations(scenario, results):
    violations = []
    for i, r in enumerate(results):
        if i >= len(scenario.steps):
            break
        st = scenario.steps[i]
        for needle in as_list(st.get("expect_in_result")):
            if needle not in r["text"]:
                violations.append({"step": i, "check": "expect_in_result",
                                   "needle": needle,
                                   "result": r["text"][:RESULT_LOG_CHARS]})
        for needle in as_list(st.get("expect_in_result_not")):
            if needle in r["text"]:
                violations.append({"step": i, "check": "expect_in_result_not",
                                   "needle": needle,
                                   "result": r["text"][:RESULT_LOG_CHARS]})
    return violations


def json_from_schema(schema, key=""):
    """A small value matching a JSON schema (for JSON-mode side requests)."""
    if not isinstance(schema, dict):
        return "mock"
    if schema.get("enum"):
        enum = schema["enum"]
        for pref in ("user", "flash"):
            if key in ("next_speaker", "model_choice") and pref in enum:
                return pref
        return enum[0]
    for k in ("anyOf", "oneOf"):
        if isinstance(schema.get(k), list) and schema[k]:
            return json_from_schema(schema[k][0], key)
    ty = schema_type(schema)
    if ty == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: json_from_schema(v, k) for k, v in props.items()}
    if ty == "array":
        return []
    if ty == "boolean":
        return False
    if ty in ("integer", "number"):
        # Gemini CLI's router validates complexity_score >= 1 without saying so.
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 1))
        return lo if isinstance(lo, (int, float)) else 1
    if key.endswith("reasoning"):
        return "Scripted mock answer."
    return "mock"


# --------------------------------------------------------------------------
# wire formats


def jwt_unsigned(claims):
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
    return "%s.%s.%s" % (b64(b'{"alg":"none","typ":"JWT"}'), b64(json.dumps(claims).encode("utf-8")),
                         b64(b"mock"))


def new_id(prefix):
    return prefix + uuid.uuid4().hex[:24]


def sse(events):
    """events: list of (event_name or None, data obj or str)."""
    out = []
    for name, data in events:
        if name:
            out.append("event: %s\n" % name)
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append("data: %s\n\n" % payload)
    return "".join(out).encode("utf-8")


def usage_numbers(body):
    n = len(json.dumps(body)) // 4
    return max(n, 1), 8


# Anthropic ---------------------------------------------------------------


def anthropic_reply(body, call, text):
    model = body.get("model") or "claude-mock"
    in_tok, out_tok = usage_numbers(body)
    if call is not None:
        block = {"type": "tool_use", "id": new_id("toolu_mock_"), "name": call.name,
                 "input": call.args}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": text}
        stop = "end_turn"
    msg_id = new_id("msg_mock_")
    usage = {"input_tokens": in_tok, "output_tokens": out_tok,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    if not body.get("stream"):
        return "application/json", json.dumps({
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": None,
            "usage": usage}).encode("utf-8")
    ev = [("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": dict(usage, output_tokens=1)}})]
    if block["type"] == "tool_use":
        start = dict(block, input={})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call.args)}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
    ev += [("content_block_start", {"type": "content_block_start", "index": 0,
                                    "content_block": start}),
           ("ping", {"type": "ping"}),
           ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                    "delta": delta}),
           ("content_block_stop", {"type": "content_block_stop", "index": 0}),
           ("message_delta", {"type": "message_delta",
                              "delta": {"stop_reason": stop, "stop_sequence": None},
                              "usage": {"output_tokens": out_tok}}),
           ("message_stop", {"type": "message_stop"})]
    return "text/event-stream", sse(ev)


# OpenAI Responses ---------------------------------------------------------


def responses_reply(body, call, text):
    model = body.get("model") or "gpt-mock"
    in_tok, out_tok = usage_numbers(body)
    resp_id = new_id("resp_mock_")
    if call is not None and call.kind == "custom":
        item = {"type": "custom_tool_call", "id": new_id("ctc_"),
                "call_id": new_id("call_"), "name": call.name, "input": call.raw,
                "status": "completed"}
    elif call is not None:
        item = {"type": "function_call", "id": new_id("fc_"),
                "call_id": new_id("call_"), "name": call.name,
                "arguments": call.args_json(), "status": "completed"}
    else:
        item = {"type": "message", "id": new_id("msg_"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
    usage = {"input_tokens": in_tok, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": out_tok,
             "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": in_tok + out_tok}
    base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
            "model": model, "parallel_tool_calls": False, "tool_choice": "auto",
            "tools": [], "error": None, "incomplete_details": None}
    final = dict(base, status="completed", output=[item], usage=usage)
    if not body.get("stream"):
        return "application/json", json.dumps(final).encode("utf-8")
    seq = [0]

    def ev(name, data):
        data = dict(data, type=name, sequence_number=seq[0])
        seq[0] += 1
        return (name, data)

    events = [ev("response.created", {"response": dict(base, status="in_progress", output=[])}),
              ev("response.in_progress", {"response": dict(base, status="in_progress", output=[])})]
    if item["type"] == "message":
        added = dict(item, status="in_progress", content=[])
        events += [
            ev("response.output_item.added", {"output_index": 0, "item": added}),
            ev("response.content_part.added", {"output_index": 0, "item_id": item["id"],
                                               "content_index": 0,
                                               "part": {"type": "output_text", "text": "",
                                                        "annotations": []}}),
            ev("response.output_text.delta", {"output_index": 0, "item_id": item["id"],
                                              "content_index": 0, "delta": text}),
            ev("response.output_text.done", {"output_index": 0, "item_id": item["id"],
                                             "content_index": 0, "text": text}),
            ev("response.content_part.done", {"output_index": 0, "item_id": item["id"],
                                              "content_index": 0,
                                              "part": item["content"][0]}),
        ]
    elif item["type"] == "function_call":
        events += [
            ev("response.output_item.added", {"output_index": 0,
                                              "item": dict(item, arguments="",
                                                           status="in_progress")}),
            ev("response.function_call_arguments.delta", {"output_index": 0,
                                                          "item_id": item["id"],
                                                          "delta": item["arguments"]}),
            ev("response.function_call_arguments.done", {"output_index": 0,
                                                         "item_id": item["id"],
                                                         "arguments": item["arguments"]}),
        ]
    else:
        events += [
            ev("response.output_item.added", {"output_index": 0,
                                              "item": dict(item, input="",
                                                           status="in_progress")}),
            ev("response.custom_tool_call_input.delta", {"output_index": 0,
                                                         "item_id": item["id"],
                                                         "delta": item["input"]}),
            ev("response.custom_tool_call_input.done", {"output_index": 0,
                                                        "item_id": item["id"],
                                                        "input": item["input"]}),
        ]
    events += [ev("response.output_item.done", {"output_index": 0, "item": item}),
               ev("response.completed", {"response": final})]
    return "text/event-stream", sse(events)


# Gemini -------------------------------------------------------------------


def gemini_reply(body, call, text, stream, model, wrap=False):
    in_tok, out_tok = usage_numbers(body)
    if call is not None:
        part = {"functionCall": {"name": call.name, "args": call.args}}
    else:
        part = {"text": text}
    resp = {"candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": in_tok,
                              "candidatesTokenCount": out_tok,
                              "totalTokenCount": in_tok + out_tok},
            "modelVersion": model, "responseId": new_id("mock")}
    if wrap:  # Code Assist: {"response": <the Gemini API's answer>, "traceId": ...}
        resp = {"response": resp, "traceId": new_id("trace")}
    if not stream:
        return "application/json", json.dumps(resp).encode("utf-8")
    return "text/event-stream", sse([(None, resp)])


def gemini_json_answer(body):
    gc = body.get("generationConfig") or body.get("generation_config") or {}
    mime = gc.get("responseMimeType") or gc.get("response_mime_type") or ""
    schema = gc.get("responseJsonSchema") or gc.get("responseSchema") \
        or gc.get("response_schema")
    if "json" in str(mime).lower() or schema:
        return json.dumps(json_from_schema(schema or {"type": "object"}))
    return None


# OpenAI chat completions --------------------------------------------------


def chat_reply(body, call, text):
    model = body.get("model") or "mock"
    in_tok, out_tok = usage_numbers(body)
    cid = new_id("chatcmpl-mock")
    created = int(time.time())
    usage = {"prompt_tokens": in_tok, "completion_tokens": out_tok,
             "total_tokens": in_tok + out_tok}
    if call is not None:
        tc = {"id": new_id("call_"), "type": "function",
              "function": {"name": call.name, "arguments": call.args_json()}}
        finish = "tool_calls"
    else:
        tc = None
        finish = "stop"
    if not body.get("stream"):
        msg = {"role": "assistant", "content": None if tc else text}
        if tc:
            msg["tool_calls"] = [tc]
        return "application/json", json.dumps({
            "id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": usage}).encode("utf-8")

    def chunk(delta, fin=None, **extra):
        d = {"id": cid, "object": "chat.completion.chunk", "created": created,
             "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}
        d.update(extra)
        return (None, d)

    events = []
    if tc:
        events.append(chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": tc["id"], "type": "function",
             "function": {"name": tc["function"]["name"], "arguments": ""}}]}))
        events.append(chunk({"tool_calls": [
            {"index": 0, "function": {"arguments": tc["function"]["arguments"]}}]}))
    else:
        events.append(chunk({"role": "assistant", "content": ""}))
        events.append(chunk({"content": text}))
    events.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, {"id": cid, "object": "chat.completion.chunk",
                              "created": created, "model": model, "choices": [],
                              "usage": usage}))
    events.append((None, "[DONE]"))
    return "text/event-stream", sse(events)


# --------------------------------------------------------------------------
# HTTP


class State:
    def __init__(self, scenario, log_path, max_requests, quiet, dump_dir=None):
        self.dump_dir = dump_dir
        self.device_polls = 0  # ChatGPT device-code login polls so far
        self.gate_dir = os.getcwd()
        self.scenario = scenario
        self.log_path = log_path
        self.max_requests = max_requests
        self.quiet = quiet
        self.lock = threading.Lock()
        self.count = 0

    def next_request(self):
        with self.lock:
            self.count += 1
            return self.count

    def log(self, entry):
        line = json.dumps(entry, sort_keys=True)
        with self.lock:
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
            if not self.quiet:
                short = {k: entry.get(k) for k in ("n", "method", "path", "kind",
                                                   "step", "action")}
                if entry.get("violations"):
                    short["violations"] = len(entry["violations"])
                sys.stderr.write("mock: %s\n" % json.dumps(short))
                sys.stderr.flush()


GEMINI_RE = re.compile(r"^/v1(?:beta|alpha|)?/models/([^/:]+):([A-Za-z]+)$")
# The account a Claude login made against this mock belongs to.
CLAUDE_LOGIN_ACCOUNT = "00000000-0000-4000-8000-0000000000a1"
CLAUDE_LOGIN_ORG = "00000000-0000-4000-8000-0000000000b2"

CODE_ASSIST_RE = re.compile(r"^/v1internal:([A-Za-z]+)$")
CODE_ASSIST_PROJECT = "airlock-mock-project"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "airlock-mock/1"
    state = None  # set in main

    def log_message(self, fmt, *args):  # quiet default access log
        pass

    # -- plumbing

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        else:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n > 0 else b""
        enc = (self.headers.get("Content-Encoding") or "").lower().strip()
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "zstd":  # Codex on a ChatGPT login
            raw = subprocess.run(["zstd", "-dc"], input=raw, capture_output=True, check=True).stdout
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        elif enc in ("", "identity"):
            pass
        else:
            raise ValueError("unsupported Content-Encoding: %s" % enc)
        return raw

    def send(self, status, ctype, payload, extra_headers=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and payload:
            self.wfile.write(payload)
        self.wfile.flush()

    def hold(self, spec, entry):
        """Per-step "delay" (seconds) and "wait_for_file" (path, relative to
        --gate-dir) with "wait_timeout" (seconds, default 120): hold the answer,
        e.g. so that a test can change the host project mid-session."""
        st = self.state
        delay = float(spec.get("delay") or 0)
        gate = spec.get("wait_for_file")
        if not delay and not gate:
            return
        st.log({"n": entry["n"], "time": time.time(), "method": "POST",
                "path": self.path, "kind": "hold", "step": entry.get("step"),
                "delay": delay, "wait_for_file": gate})
        if delay:
            time.sleep(min(delay, 600))
        if gate:
            path = gate if os.path.isabs(gate) else os.path.join(st.gate_dir, gate)
            deadline = time.time() + float(spec.get("wait_timeout") or 120)
            while not os.path.exists(path) and time.time() < deadline:
                time.sleep(0.05)
            entry["waited_for_file"] = path
            entry["wait_timed_out"] = not os.path.exists(path)

    def send_json(self, status, obj):
        self.send(status, "application/json", json.dumps(obj).encode("utf-8"))

    # -- methods

    def do_HEAD(self):
        self.send(200, "text/plain", b"")

    def do_GET(self):
        path = urlsplit(self.path).path
        n = self.state.next_request()
        entry = {"n": n, "time": time.time(), "method": "GET", "path": self.path}
        if path in ("/", "/health", "/healthz"):
            entry["kind"] = "health"
            self.send(200, "text/plain", b"ok\n")
        elif path == "/backend-api/wham/accounts/check":
            account = self.headers.get("chatgpt-account-id") or ""
            entry.update(kind="accounts_check", account=account,
                         authorization=self.headers.get("Authorization"))
            self.send_json(200, {"accounts": [{"id": account, "workspace_backend_origin": "NO_CONSTRAINT",
                                               "account_routing_override": "NO_CONSTRAINT"}]})
        elif path == "/backend-api/wham/settings/user":
            entry.update(kind="settings_user", authorization=self.headers.get("Authorization"))
            self.send_json(200, {})
        elif path == "/backend-api/codex/models":
            entry.update(kind="codex_models", authorization=self.headers.get("Authorization"))
            self.send_json(200, {"models": []})
        elif path == "/api/oauth/profile":
            entry.update(kind="claude_profile", authorization=self.headers.get("Authorization"))
            self.send_json(200, {
                "account": {"uuid": CLAUDE_LOGIN_ACCOUNT, "email": "login@example.com",
                            "display_name": "Login User", "created_at": "2026-01-01T00:00:00Z"},
                "organization": {"uuid": CLAUDE_LOGIN_ORG, "organization_type": "claude_max",
                                 "rate_limit_tier": "default_claude_max_20x", "billing_type": "stripe_subscription",
                                 "subscription_created_at": "2026-01-01T00:00:00Z"}})
        elif path == "/oauth2/v2/userinfo":
            entry.update(kind="google_userinfo", authorization=self.headers.get("Authorization"))
            self.send_json(200, {"id": "100000000000000000001", "email": "user@example.com", "verified_email": True})
        elif path == "/api/oauth/claude_cli/roles":
            entry.update(kind="claude_roles", authorization=self.headers.get("Authorization"))
            self.send_json(200, {"organization_role": "admin", "workspace_role": None,
                                 "organization_name": "Login Org"})
        elif path in ("/v1/models", "/models"):
            entry["kind"] = "models"
            self.send_json(200, {"object": "list", "data": [
                {"id": "mock-model", "object": "model", "created": 0,
                 "owned_by": "airlock-mock"}]})
        else:
            entry["kind"] = "not_found"
            self.send_json(404, {"error": {"message": "not found", "type": "not_found"}})
        self.state.log(entry)

    def do_POST(self):
        st = self.state
        n = st.next_request()
        split = urlsplit(self.path)
        path = split.path.rstrip("/") or "/"
        entry = {"n": n, "time": time.time(), "method": "POST", "path": self.path}
        try:
            raw = self.read_body()
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype == "application/x-www-form-urlencoded":
                body = {k: v[0] for k, v in parse_qs(raw.decode("utf-8"), keep_blank_values=True).items()}
                body["_form"] = True
            else:
                body = json.loads(raw.decode("utf-8")) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("request body is not a JSON object")
            if st.dump_dir:
                with open(os.path.join(st.dump_dir, "%04d.json" % n), "w",
                          encoding="utf-8") as f:
                    json.dump({"path": self.path, "headers": dict(self.headers),
                               "body": body}, f, indent=1)
        except Exception as e:  # noqa: BLE001 - any bad input is a 400
            entry.update(kind="bad_request", error=str(e))
            st.log(entry)
            self.send_json(400, {"error": {"type": "invalid_request_error",
                                           "message": "mock: %s" % e}})
            return
        if st.max_requests and n > st.max_requests:
            entry.update(kind="over_limit")
            st.log(entry)
            self.send_json(400, {"error": {"type": "invalid_request_error",
                                           "message": "mock: request limit reached"}})
            return

        if path == "/v1/oauth/token" and body.get("grant_type") == "authorization_code":
            rotated = uuid.uuid4().hex[:16]
            entry.update(kind="claude_oauth_code", code=body.get("code"), code_verifier=body.get("code_verifier"),
                         redirect_uri=body.get("redirect_uri"), client_id=body.get("client_id"),
                         state=body.get("state"), rotated=rotated)
            st.log(entry)
            if body.get("code") != "FAKE-CLAUDE-CODE" or not body.get("code_verifier"):
                self.send_json(400, {"error": "invalid_grant", "error_description": "mock: unknown code"})
                return
            self.send_json(200, {"access_token": "sk-ant-oat01-login-" + rotated,
                                 "refresh_token": "sk-ant-ort01-login-" + rotated,
                                 "expires_in": 28800, "token_type": "Bearer",
                                 "scope": "user:inference user:profile user:sessions:claude_code",
                                 "account": {"uuid": CLAUDE_LOGIN_ACCOUNT, "email_address": "login@example.com"},
                                 "organization": {"uuid": CLAUDE_LOGIN_ORG, "name": "Login Org"}})
            return
        if path == "/v1/oauth/token" and st.refuse_refresh:
            entry.update(kind="oauth_token_refused", refresh_token=body.get("refresh_token"))
            st.log(entry)
            self.send_json(400, {"error": "invalid_grant",
                                 "error_description": "mock: refresh token revoked"})
            return
        if path == "/v1/oauth/token":
            rotated = uuid.uuid4().hex[:16]
            entry.update(kind="oauth_token", grant_type=body.get("grant_type"),
                         refresh_token=body.get("refresh_token"), client_id=body.get("client_id"),
                         rotated=rotated)
            st.log(entry)
            self.send_json(200, {"access_token": "sk-ant-oat01-rotated-" + rotated,
                                 "refresh_token": "sk-ant-ort01-rotated-" + rotated,
                                 "expires_in": 28800, "token_type": "Bearer"})
            return
        if path == "/api/accounts/deviceauth/usercode":
            entry.update(kind="device_usercode", client_id=body.get("client_id"))
            st.log(entry)
            self.send_json(200, {"device_auth_id": "dev-FAKE-1", "user_code": "FAKE-1234", "interval": "1"})
            return
        if path == "/api/accounts/deviceauth/token":
            # Pending once (403, as while the user has not entered the code), then authorized.
            st.device_polls += 1
            entry.update(kind="device_poll", device_auth_id=body.get("device_auth_id"),
                         user_code=body.get("user_code"), poll=st.device_polls)
            st.log(entry)
            if st.device_polls < 2:
                self.send_json(403, {"error": {"code": "deviceauth_authorization_pending"}})
            else:
                self.send_json(200, {"authorization_code": "FAKE-DEVICE-AUTH-CODE",
                                     "code_challenge": "FAKE-CHALLENGE", "code_verifier": "FAKE-VERIFIER"})
            return
        if path == "/oauth/token" and body.get("grant_type") == "authorization_code":
            rotated = uuid.uuid4().hex[:16]
            auth = {"chatgpt_account_id": "acct-DEVICE-1", "chatgpt_plan_type": "plus",
                    "chatgpt_user_id": "user-DEVICE-1"}
            entry.update(kind="oauth_code", code=body.get("code"), code_verifier=body.get("code_verifier"),
                         redirect_uri=body.get("redirect_uri"), client_id=body.get("client_id"),
                         rotated=rotated)
            st.log(entry)
            if body.get("code") != "FAKE-DEVICE-AUTH-CODE" or body.get("code_verifier") != "FAKE-VERIFIER":
                self.send_json(400, {"error": "invalid_grant"})
                return
            self.send_json(200, {
                "id_token": jwt_unsigned({"email": "device@example.com", "https://api.openai.com/auth": auth,
                                          "exp": int(time.time()) + 3600}),
                "access_token": jwt_unsigned({"exp": int(time.time()) + 3600, "device": rotated,
                                              "https://api.openai.com/auth": auth}),
                "refresh_token": "rt_device-" + rotated})
            return
        if path == "/oauth/token" and st.refuse_refresh:
            entry.update(kind="oauth_token_refused", refresh_token=body.get("refresh_token"))
            st.log(entry)
            self.send_json(401, {"error": {"code": "refresh_token_expired", "message": "mock: expired"}})
            return
        if path == "/oauth/token":
            rotated = uuid.uuid4().hex[:16]
            access = jwt_unsigned({"exp": int(time.time()) + 3600, "rotated": rotated})
            entry.update(kind="oauth_token", grant_type=body.get("grant_type"),
                         refresh_token=body.get("refresh_token"), client_id=body.get("client_id"),
                         rotated=rotated, access_token=access)
            st.log(entry)
            self.send_json(200, {"access_token": access, "refresh_token": "rt_rotated-" + rotated,
                                 "id_token": jwt_unsigned({"email": "user@example.com"})})
            return
        if path == "/token" and body.get("grant_type") == "authorization_code":
            rotated = uuid.uuid4().hex[:16]
            entry.update(kind="google_oauth_code", code=body.get("code"), code_verifier=body.get("code_verifier"),
                         redirect_uri=body.get("redirect_uri"), client_id=body.get("client_id"),
                         client_secret=body.get("client_secret"), form=bool(body.get("_form")), rotated=rotated)
            st.log(entry)
            if body.get("code") != "FAKE-GOOGLE-CODE" or not body.get("code_verifier"):
                self.send_json(400, {"error": "invalid_grant", "error_description": "Malformed auth code."})
                return
            self.send_json(200, {"access_token": "ya29.login-" + rotated, "refresh_token": "1//login-" + rotated,
                                 "expires_in": 3599, "token_type": "Bearer",
                                 "scope": "https://www.googleapis.com/auth/cloud-platform "
                                          "https://www.googleapis.com/auth/userinfo.email openid",
                                 "id_token": "eyJhbGciOiJub25lIn0.e30."})
            return
        if path == "/token" and st.refuse_refresh:
            entry.update(kind="oauth_token_refused", refresh_token=body.get("refresh_token"))
            st.log(entry)
            self.send_json(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
            return
        if path == "/token":
            rotated = uuid.uuid4().hex[:16]
            entry.update(kind="oauth_token", grant_type=body.get("grant_type"),
                         refresh_token=body.get("refresh_token"), client_id=body.get("client_id"),
                         client_secret=body.get("client_secret"), form=bool(body.get("_form")),
                         rotated=rotated)
            st.log(entry)
            self.send_json(200, {"access_token": "ya29.rotated-" + rotated, "expires_in": 3599,
                                 "scope": "https://www.googleapis.com/auth/cloud-platform",
                                 "token_type": "Bearer", "id_token": "eyJhbGciOiJub25lIn0.e30."})
            return
        cm = CODE_ASSIST_RE.match(path)
        model_call = path in ("/v1/messages", "/messages", "/backend-api/codex/responses") or \
            (cm is not None and cm.group(1) in ("generateContent", "streamGenerateContent"))
        if st.reject_first_bearer and model_call:
            st.reject_first_bearer = False
            entry.update(kind="rejected_bearer", authorization=self.headers.get("Authorization"))
            st.log(entry)
            self.send_json(401, {"type": "error", "error": {"type": "authentication_error",
                                                            "message": "mock: token expired"}})
            return

        gm = GEMINI_RE.match(path)
        # The Gemini API's method and model: from the path, or from Code Assist's body.
        gemini_method, gemini_model = (gm.group(2), gm.group(1)) if gm else (None, None)
        wrap = False
        if cm and cm.group(1) == "loadCodeAssist":
            entry.update(api="code_assist", kind="load_code_assist",
                         authorization=self.headers.get("Authorization"))
            st.log(entry)
            tier = {"id": "standard-tier", "name": "Mock Code Assist", "hasOnboardedPreviously": True}
            self.send_json(200, {"currentTier": tier, "allowedTiers": [dict(tier, isDefault=True)],
                                 "cloudaicompanionProject": CODE_ASSIST_PROJECT})
            return
        if cm and cm.group(1) not in ("generateContent", "streamGenerateContent", "countTokens"):
            entry.update(api="code_assist", kind="code_assist_" + cm.group(1))
            st.log(entry)
            self.send_json(200, {})
            return
        if cm:  # Code Assist wraps the Gemini API's request: {model, project, request: {...}}
            request = body.get("request") if isinstance(body.get("request"), dict) else {}
            entry["project"] = body.get("project")
            gemini_method, gemini_model = cm.group(1), body.get("model")
            body = request
            wrap = gemini_method != "countTokens"
        if path in ("/v1/messages", "/messages"):
            api, tools, results = "anthropic", tools_anthropic(body), results_anthropic(body)
        elif path in ("/v1/messages/count_tokens", "/messages/count_tokens"):
            entry.update(api="anthropic", kind="count_tokens")
            st.log(entry)
            self.send_json(200, {"input_tokens": usage_numbers(body)[0]})
            return
        elif path in ("/v1/responses", "/responses", "/backend-api/codex/responses"):
            api, tools, results = "responses", tools_responses(body), results_responses(body)
        elif path in ("/v1/chat/completions", "/chat/completions"):
            api, tools, results = "chat", tools_chat(body), results_chat(body)
        elif gemini_method in ("generateContent", "streamGenerateContent"):
            api, tools, results = "gemini", tools_gemini(body), results_gemini(body)
        elif gemini_method == "countTokens":
            entry.update(api="gemini", kind="count_tokens")
            st.log(entry)
            self.send_json(200, {"totalTokens": usage_numbers(body)[0]})
            return
        else:
            entry["kind"] = "not_found"
            st.log(entry)
            self.send_json(404, {"error": {"message": "not found", "type": "not_found"}})
            return

        model = body.get("model") or gemini_model
        detected = detect_workdir(body)
        workdir = detected or st.scenario.workdir or DEFAULT_WORKDIR
        step = len(results)
        entry.update(api=api, model=model, stream=bool(body.get("stream")),
                     tools=[t.name for t in tools], workdir=workdir,
                     workdir_detected=detected is not None,
                     tool_results=[dict(r, text=r["text"][:RESULT_LOG_CHARS])
                                   for r in results],
                     step=step, steps_total=len(st.scenario.steps))
        violations = check_expectations(st.scenario, results)
        if violations:
            entry["violations"] = violations

        call = None
        text = st.scenario.final_text
        is_agent_turn = find_tool(tools, SHELL_TOOL_NAMES + WRITE_TOOL_NAMES) is not None
        json_text = gemini_json_answer(body) if api == "gemini" else None
        if json_text is not None:
            entry["kind"] = "json"
            text = json_text
        elif not is_agent_turn:
            entry["kind"] = "side"
            text = "Mock answer."
        elif step < len(st.scenario.steps):
            entry["kind"] = "agent"
            call = make_call(st.scenario.steps[step], step, tools, workdir)
            if call is None:
                entry["error"] = "no usable tool for step %d among %s" % (
                    step, [t.name for t in tools])
                text = "mock: cannot perform step %d: no usable tool" % step
        else:
            entry["kind"] = "agent"
        entry["action"] = call.describe() if call else {"text": text}
        if entry["kind"] == "agent":
            hold = st.scenario.steps[step] if step < len(st.scenario.steps) \
                else st.scenario.final_hold
            self.hold(hold, entry)

        if api == "anthropic":
            ctype, payload = anthropic_reply(body, call, text)
        elif api == "responses":
            ctype, payload = responses_reply(body, call, text)
        elif api == "chat":
            ctype, payload = chat_reply(body, call, text)
        else:
            stream = gemini_method == "streamGenerateContent"
            sse_mode = "alt=sse" in split.query
            ctype, payload = gemini_reply(body, call, text, stream and sse_mode, model, wrap)
            if stream and not sse_mode:  # plain streaming: a JSON array of responses
                payload = b"[" + payload + b"]"
        st.log(entry)
        self.send(200, ctype, payload)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0,
                    help="0 picks a free port; the port is printed as 'PORT <n>'")
    ap.add_argument("--scenario", help="JSON scenario file (default: no steps)")
    ap.add_argument("--log", help="append one JSON line per request here")
    ap.add_argument("--max-requests", type=int, default=500,
                    help="answer 400 to every POST after this many requests (0: no limit)")
    ap.add_argument("--exit-after", type=float, default=0,
                    help="stop serving after this many seconds (0: never)")
    ap.add_argument("--dump-dir",
                    help="write each POST request (path, headers, body) to DIR/NNNN.json")
    ap.add_argument("--gate-dir", default=".",
                    help="directory for relative wait_for_file paths (default: cwd)")
    ap.add_argument("--quiet", action="store_true", help="no per-request line on stderr")
    ap.add_argument("--reject-first-bearer", action="store_true",
                    help="answer the first model request with 401")
    ap.add_argument("--refuse-refresh", action="store_true",
                    help="answer every /v1/oauth/token with 400 invalid_grant")
    ap.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate (chain)")
    ap.add_argument("--tls-key", help="the certificate's PEM private key")
    args = ap.parse_args(argv)

    try:
        scenario = Scenario.load(args.scenario)
    except (OSError, ValueError) as e:
        sys.stderr.write("mock: bad scenario: %s\n" % e)
        return 2
    if args.dump_dir:
        os.makedirs(args.dump_dir, exist_ok=True)
    Handler.state = State(scenario, args.log, args.max_requests, args.quiet,
                          args.dump_dir)
    Handler.state.gate_dir = os.path.abspath(args.gate_dir)
    Handler.state.reject_first_bearer = args.reject_first_bearer
    Handler.state.refuse_refresh = args.refuse_refresh
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.allow_reuse_address = True
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    sys.stdout.write("PORT %d\n" % httpd.server_address[1])
    sys.stdout.flush()
    if args.exit_after > 0:
        t = threading.Timer(args.exit_after, httpd.shutdown)
        t.daemon = True
        t.start()
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
