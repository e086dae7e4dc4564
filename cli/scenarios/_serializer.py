"""A vcrpy serializer that keeps cassettes readable: parsed JSON, SSE as text.

vcrpy's own YAML serializer stores request bodies as one escaped JSON string,
which makes a cassette diff unreadable. Here, as in pydantic-ai's
`tests/json_body_serializer.py`:

- a JSON body (request or response) is stored parsed, under `parsed_body`,
  so a changed message shows up as a changed YAML line;
- any other text body, such as an SSE stream, is stored as a YAML literal
  block, one SSE line per YAML line, exactly as the provider sent it;
- the cassette's `metadata` (where it was recorded) comes first in the file.

Loading reverses it: a parsed body becomes compact JSON again. That is not
byte-identical to what was sent, which does not matter: requests are matched
on their parsed JSON (`_matching`), and a JSON response is read as JSON.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

__all__ = ["deserialize", "serialize"]

_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# YAML reads these as line breaks inside a block scalar, so a literal block
# would not give the same string back; such strings keep the quoted style.
_NOT_LITERAL = ("\r", "\x85", "\u2028", "\u2029")


class _LiteralDumper(_Dumper):  # type: ignore[valid-type,misc]
    """Writes multi-line strings as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data and not any(char in data for char in _NOT_LITERAL):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_LiteralDumper.add_representer(str, _represent_str)


def _is_json(headers: dict[str, list[str]]) -> bool:
    for name, values in headers.items():
        if name.lower() == "content-type":
            return any("json" in value.lower() for value in values)
    return False


def _body_text(body: Any) -> str | None:
    if isinstance(body, bytes):
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return body if isinstance(body, str) else None


def _parsed(text: str | None) -> tuple[bool, Any]:
    if not text:
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _request_out(request: dict[str, Any]) -> dict[str, Any]:
    headers = request.get("headers") or {}
    out: dict[str, Any] = {
        "method": request["method"],
        "uri": request["uri"],
        "headers": headers,
    }
    ok, parsed = _parsed(_body_text(request.get("body"))) if _is_json(headers) else (False, None)
    if ok:
        out["parsed_body"] = parsed
    else:
        out["body"] = request.get("body")
    return out


def _response_out(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers") or {}
    out: dict[str, Any] = {"status": response["status"], "headers": headers}
    body = response.get("body") or {}
    text = _body_text(body.get("string"))
    ok, parsed = _parsed(text) if _is_json(headers) else (False, None)
    if ok:
        out["parsed_body"] = parsed
    else:
        out["body"] = {**body, "string": text if text is not None else body.get("string")}
    return out


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def serialize(cassette_dict: dict[str, Any]) -> str:
    """Write a vcrpy cassette dict (`version`, `interactions`, `metadata`) as readable YAML."""
    data: dict[str, Any] = {}
    if cassette_dict.get("metadata"):
        data["metadata"] = cassette_dict["metadata"]
    data["version"] = cassette_dict["version"]
    data["interactions"] = [
        {
            "request": _request_out(interaction["request"]),
            "response": _response_out(interaction["response"]),
        }
        for interaction in cassette_dict["interactions"]
    ]
    text: str = yaml.dump(
        data, Dumper=_LiteralDumper, allow_unicode=True, sort_keys=False, width=100
    )
    if yaml.load(text, Loader=_Loader) != data:  # pragma: no cover - a PyYAML style bug
        text = yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=100)
    return text


def deserialize(cassette_string: str) -> dict[str, Any]:
    """Read a cassette written by `serialize` back into vcrpy's dict shape."""
    data: dict[str, Any] = yaml.load(cassette_string, Loader=_Loader)
    for interaction in data.get("interactions") or ():
        request = interaction["request"]
        if "parsed_body" in request:
            request["body"] = _compact_json(request.pop("parsed_body"))
        response = interaction["response"]
        if "parsed_body" in response:
            response["body"] = {"string": _compact_json(response.pop("parsed_body"))}
    return data
