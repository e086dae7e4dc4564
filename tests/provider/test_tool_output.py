"""Reading `nav` tool results (reference/nav-cli.md §4) the way the model does."""

from __future__ import annotations

import pytest

from navagent.fixtures.provider.model._tool_output import (
    parse_table,
    read_outcome,
    strip_ansi,
    summarise_outcome,
)
from tests.provider import _helpers as h


def test_strip_ansi_removes_styles_but_keeps_padding_and_unicode() -> None:
    assert strip_ansi(h.bold("NAME    ") + " " + h.colour(32, "✓ Ready")) == "NAME     ✓ Ready"


def test_read_outcome_splits_the_agent_exit_trailer() -> None:
    outcome = read_outcome(h.NOT_FOUND)
    assert outcome.exit_code == 1 and outcome.failed
    assert outcome.body.endswith("MetadataMap { headers: {} }")
    assert read_outcome("ok\n").exit_code is None


def test_parse_table_uses_header_positions_when_a_cell_is_empty() -> None:
    rows = parse_table(strip_ansi(h.ROUTES))
    assert rows[0]["BASE URL"] == "https://integrate.api.nvidia.com/v1"
    assert rows[0]["MODEL"] == "nvidia/nemotron-3-nano-30b-a3b"
    assert rows[1] == {
        "NAME": "broken",
        "HINT": "<missing>",
        "BASE URL": "",
        "PROTOCOLS": "",
        "MODEL": "",
        "ENABLED": "false",
    }


@pytest.mark.parametrize(
    ("tool", "arguments", "output", "summary"),
    [
        (
            "sandbox_list",
            {},
            h.SANDBOX_LIST,
            "You have 3 sandboxes: dev-box (Ready), py-worker (Provisioning), gpu-trainer (Error).",
        ),
        ("sandbox_list", {}, "No sandboxes found.\n", "You have no sandboxes."),
        (
            "sandbox_list",
            {},
            "NAME  NAMESPACE  CREATED  PHASE\n"
            + "".join(f"box-{i}  navigator  -  Ready\n" for i in range(10)),
            "You have 10 sandboxes: box-0 (Ready), box-1 (Ready), box-2 (Ready), box-3 (Ready), "
            "box-4 (Ready), box-5 (Ready), box-6 (Ready), box-7 (Ready) and 2 more.",
        ),
        (
            "sandbox_get",
            {"name": "py-worker"},
            h.SANDBOX_GET,
            "Sandbox py-worker is Ready (namespace navigator, "
            "id 5b0c2f8e-3d1a-4c7e-9a51-0f2b7c9d1e44). "
            "Its policy allows network access for github, nvidia.",
        ),
        (
            "sandbox_create",
            {"name": "web", "command": "echo hello"},
            h.SANDBOX_CREATE,
            'Created sandbox web; it is Ready. The command printed: "hello".',
        ),
        (
            "sandbox_create",
            {},
            h.SANDBOX_CREATE.removesuffix("hello\n"),
            "Created sandbox web; it is Ready.",
        ),
        (
            "sandbox_delete",
            {"name": "py-worker"},
            f"{h.bold(h.colour(32, '✓'))} Deleted sandbox py-worker\n",
            "Deleted sandbox py-worker.",
        ),
        (
            "sandbox_delete",
            {"name": "old"},
            f"{h.colour(33, '!')} Sandbox old not found\n",
            "Sandbox old was not found, so there was nothing to delete.",
        ),
        (
            "sandbox_logs",
            {"name": "dev-box"},
            h.SANDBOX_LOGS,
            "Sandbox dev-box has 3 log lines, 1 error; "
            'the last error: "CONNECT denied action=deny".',
        ),
        (
            "sandbox_logs",
            {"name": "dev-box"},
            "Command completed successfully (no output).",
            "Sandbox dev-box has no log lines yet.",
        ),
        (
            "provider_list",
            {},
            h.PROVIDER_LIST,
            "You have 3 providers: anthropic (claude), gh (github), nvidia (nvidia).",
        ),
        (
            "provider_get",
            {"name": "anthropic"},
            h.PROVIDER_GET,
            "Provider anthropic has type claude, credential keys: ANTHROPIC_API_KEY, "
            "config keys: none.",
        ),
        (
            "inference_route_list",
            {},
            h.ROUTES,
            "There are 2 inference routes: qwzmke (hint agent, "
            "model nvidia/nemotron-3-nano-30b-a3b, openai_chat_completions, enabled), "
            "broken (hint <missing>, disabled).",
        ),
        (
            "inference_route_list",
            {},
            "No inference routes found\n",
            "There are no inference routes.",
        ),
        (
            "cluster_status",
            {},
            h.CLUSTER_STATUS,
            "Cluster demo (https://127.0.0.1:8080) is Connected, server version 0.1.0.",
        ),
        (
            "cluster_status",
            {},
            f"{h.title('Server Status')}\n\n  {h.dim('Cluster:')} demo\n  {h.dim('Server:')} "
            "https://127.0.0.1:8080\nError:   × client error (Connect)\n  ├─▶ tcp connect error\n"
            "  ╰─▶ Connection refused (os error 111)\n\nCommand exited with code: 1",
            "Checking the cluster status failed with exit code 1: `client error (Connect)`.",
        ),
        (
            "sandbox_get",
            {},
            "error: the following required arguments were not provided:\n  <NAME>\n\n"
            "Usage: navigator sandbox get <NAME>\n\nCommand exited with code: 2",
            "Getting sandbox failed with exit code 2: "
            "`error: the following required arguments were not provided:`.",
        ),
        (
            "sandbox_logs",
            {"name": "dev-box"},
            "Tool call timed out after 30s.",
            'Reading the logs of dev-box timed out: "Tool call timed out after 30s.".',
        ),
        (
            "sandbox_delete",
            {"name": "dev-box"},
            "User declined to run this command.",
            "You declined deleting sandbox dev-box, so I did not run it.",
        ),
        (
            "sandbox_get",
            {"name": "café-ß"},
            h.SANDBOX_GET.replace("py-worker", "café-ß"),
            "Sandbox café-ß is Ready (namespace navigator, "
            "id 5b0c2f8e-3d1a-4c7e-9a51-0f2b7c9d1e44). "
            "Its policy allows network access for github, nvidia.",
        ),
    ],
)
def test_summaries_use_what_the_tool_returned(tool, arguments, output, summary) -> None:
    assert summarise_outcome(tool, arguments, output) == summary
