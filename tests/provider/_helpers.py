"""Shared request builders, tool definitions, sample `nav` outputs and SSE folding."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from navagent.fixtures.provider import TOOL_NAMES

_PARAMETERS: dict[str, dict[str, Any]] = {
    "sandbox_get": {"name": {"type": "string"}},
    "sandbox_create": {
        "name": {"type": "string"},
        "image": {"type": "string"},
        "command": {"type": "string"},
    },
    "sandbox_delete": {"name": {"type": "string"}},
    "sandbox_logs": {"name": {"type": "string"}, "lines": {"type": "integer"}},
    "provider_get": {"name": {"type": "string"}},
}


def schema(name: str) -> dict[str, Any]:
    properties = _PARAMETERS.get(name, {})
    required = [key for key in properties if key == "name" and name != "sandbox_create"]
    return {"type": "object", "properties": properties, "required": required}


def openai_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": n, "description": n, "parameters": schema(n)}}
        for n in names
    ]


def anthropic_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    return [{"name": n, "description": n, "input_schema": schema(n)} for n in names]


def openai_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": messages,
        "tools": openai_tools(),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(extra)
    return {key: value for key, value in body.items() if value is not None}


def anthropic_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "messages": messages,
        "tools": anthropic_tools(),
        "stream": True,
    }
    body.update(extra)
    return {key: value for key, value in body.items() if value is not None}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# -- sample tool outputs, formatted as reference/nav-cli.md §4 describes ------

ESC = "\x1b"


def bold(text: str) -> str:
    return f"{ESC}[1m{text}{ESC}[0m"


def dim(text: str) -> str:
    return f"{ESC}[2m{text}{ESC}[0m"


def colour(code: int, text: str) -> str:
    return f"{ESC}[{code}m{text}{ESC}[39m"


def title(text: str) -> str:
    return f"{ESC}[1m{ESC}[36m{text}{ESC}[39m{ESC}[0m"


SANDBOX_LIST = (
    f"{bold('NAME       ')}  {bold('NAMESPACE')}  {bold('CREATED            ')}  {bold('PHASE')}\n"
    f"dev-box      navigator  2026-03-04 17:02:11  {colour(32, 'Ready')}\n"
    f"py-worker    navigator  2026-03-04 17:09:45  {colour(33, 'Provisioning')}\n"
    f"gpu-trainer  navigator  2026-03-04 17:12:01  {colour(31, 'Error')}\n"
)

SANDBOX_GET = (
    f"{title('Sandbox:')}\n\n"
    f"  {dim('Id:')} 5b0c2f8e-3d1a-4c7e-9a51-0f2b7c9d1e44\n"
    f"  {dim('Name:')} py-worker\n"
    f"  {dim('Namespace:')} navigator\n"
    f"  {dim('Phase:')} Ready\n\n"
    f"{title('Policy:')}\n\n"
    "  version: 1\n  inference:\n    allowed_routes:\n    - local\n"
    "  network_policies:\n    nvidia:\n      endpoints:\n      - host: integrate.api.nvidia.com\n"
    "        port: 443\n      binaries:\n      - path: /usr/bin/curl\n"
    "    github:\n      endpoints:\n      - host: api.github.com\n        port: 443\n"
)

SANDBOX_CREATE = (
    f"\n{title('Created sandbox:')}\n\n"
    f"  {dim('Id:')} 0e7d41a2-9c3b-4f5e-8a61-2d9f0b7c6e13\n"
    f"  {dim('Name:')} web\n"
    f"  {dim('Namespace:')} navigator\n"
    f"  {dim('Phase:')} {colour(33, 'Provisioning')}\n"
    f"  {dim('Phase:')} {colour(33, 'Provisioning')}\n"
    f"  {dim('Phase:')} {colour(32, 'Ready')}\n\n"
    "hello\n"
)

SANDBOX_LOGS = (
    "[1772644931.208] [gateway] [INFO ] [navigator_server::sandbox] Creating sandbox in Kubernetes"
    "\n"
    "[1772644935.002] [sandbox] [ERROR] [navigator_sandbox::proxy] CONNECT denied action=deny\n"
    "[1772644938.902] [gateway] [INFO ] [navigator_server::sandbox] Sandbox is now ready\n"
)

PROVIDER_LIST = (
    f"{bold('NAME     ')}  {bold('TYPE  ')}  {bold('CREDENTIAL_KEYS ')}  {bold('CONFIG_KEYS')}\n"
    "anthropic  claude  1                 0\n"
    "gh         github  1                 0\n"
    "nvidia     nvidia  1                 0\n"
)

PROVIDER_GET = (
    f"{title('Provider:')}\n\n"
    f"  {dim('Id:')} 0e7d41a2-9c3b-4f5e-8a61-2d9f0b7c6e13\n"
    f"  {dim('Name:')} anthropic\n"
    f"  {dim('Type:')} claude\n"
    f"  {dim('Credential keys:')} ANTHROPIC_API_KEY\n"
    f"  {dim('Config keys:')} <none>\n"
)

ROUTES = (
    bold(
        "NAME          HINT              BASE URL                                  "
        "PROTOCOLS                       MODEL                           ENABLED "
    )
    + "\n"
    + "qwzmke        agent             https://integrate.api.nvidia.com/v1       "
    "openai_chat_completions         nvidia/nemotron-3-nano-30b-a3b  true    \n"
    + "broken        <missing>                                                   "
    "                                                                false   \n"
)

CLUSTER_STATUS = (
    f"{title('Server Status')}\n\n"
    f"  {dim('Cluster:')} demo\n"
    f"  {dim('Server:')} https://127.0.0.1:8080\n"
    f"  {dim('Status:')} {colour(32, 'Connected')}\n"
    f"  {dim('Version:')} 0.1.0\n"
)

NOT_FOUND = (
    'Error:   × status: NotFound, message: "sandbox not found", details: [], metadata:\n'
    "  │ MetadataMap { headers: {} }\n\nCommand exited with code: 1"
)

# -- folding SSE bytes back into a message -------------------------------------


def sse_events(body: bytes) -> list[tuple[str | None, str]]:
    """(event, data) pairs of an SSE body that uses LF and one data line per event."""
    events = []
    for block in body.decode("utf-8").split("\n\n"):
        if not block.strip():
            continue
        event = None
        data = []
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
        events.append((event, "\n".join(data)))
    return events


def fold_openai(body: bytes) -> dict[str, Any]:
    """Accumulate a Chat Completions stream: text, calls by index, finish reason, usage."""
    text = ""
    calls: dict[int, dict[str, str]] = {}
    finish = None
    usage = None
    for _, data in sse_events(body):
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            text += delta.get("content") or ""
            for fragment in delta.get("tool_calls") or []:
                call = calls.setdefault(fragment["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] = fragment.get("id") or call["id"]
                function = fragment.get("function") or {}
                call["name"] = function.get("name") or call["name"]
                call["arguments"] += function.get("arguments") or ""
            finish = choice["finish_reason"] or finish
    return {
        "text": text,
        "calls": [calls[i] for i in sorted(calls)],
        "finish": finish,
        "usage": usage,
    }


def fold_anthropic(body: bytes) -> dict[str, Any]:
    """Accumulate a Messages stream into thinking, text, calls, stop reason and usage."""
    blocks: dict[int, dict[str, Any]] = {}
    stop = None
    usage: dict[str, Any] = {}
    for event, data in sse_events(body):
        payload = json.loads(data)
        assert payload["type"] == event
        if event == "message_start":
            usage.update(payload["message"]["usage"])
        elif event == "content_block_start":
            blocks[payload["index"]] = {**payload["content_block"], "json": ""}
        elif event == "content_block_delta":
            block, delta = blocks[payload["index"]], payload["delta"]
            kind = delta["type"]
            if kind == "text_delta":
                block["text"] += delta["text"]
            elif kind == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif kind == "signature_delta":
                block["signature"] += delta["signature"]
            elif kind == "input_json_delta":
                block["json"] += delta["partial_json"]
        elif event == "message_delta":
            stop = payload["delta"]["stop_reason"]
            usage.update(payload["usage"])
    ordered = [blocks[i] for i in sorted(blocks)]
    return {
        "thinking": "".join(b["thinking"] for b in ordered if b["type"] == "thinking"),
        "signature": "".join(b["signature"] for b in ordered if b["type"] == "thinking"),
        "text": "".join(b["text"] for b in ordered if b["type"] == "text"),
        "calls": [
            {"id": b["id"], "name": b["name"], "arguments": b["json"] or "{}"}
            for b in ordered
            if b["type"] == "tool_use"
        ],
        "stop": stop,
        "usage": usage,
    }


def conformance_dir() -> Path | None:
    """The real recordings: $NAV_CONFORMANCE_DIR, else shared/conformance/real above the repo."""
    configured = os.environ.get("NAV_CONFORMANCE_DIR")
    if configured:
        path = Path(configured)
        return path if path.is_dir() else None
    for ancestor in Path(__file__).resolve().parents:
        candidate = ancestor / "shared" / "conformance" / "real"
        if candidate.is_dir():
            return candidate
    return None
