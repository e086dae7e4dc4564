"""`nav-sim` prints what the real `navigator` prints for the nine agent commands.

Every test runs the installed console script as a subprocess with its own
state file and the fixed clock. Snapshots pin whole transcripts; the explicit
asserts name the facts from reference/nav-cli.md that must not drift.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.sim.runner import CLOCK_CREATED, ESC, NavSim

BOLD, DIM, RESET, FG_RESET = f"{ESC}1m", f"{ESC}2m", f"{ESC}0m", f"{ESC}39m"
GREEN, RED, YELLOW = f"{ESC}32m", f"{ESC}31m", f"{ESC}33m"
TITLE = f"{ESC}1m{ESC}36m{{}}{ESC}39m{ESC}0m"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def plain(text: str) -> str:
    return ANSI.sub("", text)


def label(name: str) -> str:
    return f"  {DIM}{name}:{RESET} "


# -- cluster status ---------------------------------------------------------


def test_cluster_status_connected(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("cluster", "status")
    assert result.code == 0 and result.err == ""
    assert result.out == (
        TITLE.format("Server Status")
        + "\n\n"
        + label("Cluster")
        + "demo\n"
        + label("Server")
        + "https://127.0.0.1:8080\n"
        + label("Status")
        + f"{GREEN}Connected{FG_RESET}\n"
        + label("Version")
        + "0.1.0\n"
    )
    assert result.transcript() == snapshot


# -- sandbox list -------------------------------------------------------------


def test_sandbox_list_table_layout(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("sandbox", "list")
    assert result.code == 0 and result.err == ""
    header, *rows = result.out.splitlines()
    # NAME is as wide as the longest name (gpu-trainer, 11), NAMESPACE at least 9,
    # CREATED fixed at 19, PHASE last and unpadded; padding sits inside the bold codes.
    assert header == (
        f"{BOLD}{'NAME':<11}{RESET}  {BOLD}NAMESPACE{RESET}  {BOLD}{'CREATED':<19}{RESET}  "
        f"{BOLD}PHASE{RESET}"
    )
    assert [plain(row).split()[0] for row in rows] == ["dev-box", "gpu-trainer", "py-worker"]
    assert rows[0].endswith(f"{GREEN}Ready{FG_RESET}")
    assert rows[1].endswith(f"{RED}Error{FG_RESET}")
    assert rows[2].endswith(f"{YELLOW}Provisioning{FG_RESET}")
    for row in rows:
        name, namespace, created = plain(row)[:11], plain(row)[13:22], plain(row)[24:43]
        assert namespace == "navigator" and name.strip() and plain(row)[11:13] == "  "
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", created)
    assert result.transcript() == snapshot


def test_sandbox_list_ids_names_and_paging(sim: NavSim) -> None:
    names = sim.demo("sandbox", "list", "--names")
    assert names.out == "dev-box\ngpu-trainer\npy-worker\n"
    ids = sim.demo("sandbox", "list", "--ids", "--limit", "2", "--offset", "1")
    assert ids.out == (
        "9e2d7a41-06c5-4b8f-b3d2-e81f5a7c9046\n5b0c2f8e-3d1a-4c7e-9a51-0f2b7c9d1e44\n"
    )
    assert sim.demo("sandbox", "list", "--limit=1").out.count("\n") == 2  # header + 1 row
    empty = sim.demo("sandbox", "list", "--offset", "3")
    assert (empty.code, empty.out) == (0, "No sandboxes found.\n")
    assert sim.demo("sandbox", "list", "--offset", "3", "--names").out == ""


def test_sandbox_list_name_column_grows_with_the_longest_name(sim: NavSim) -> None:
    long_name = "a-rather-long-sandbox-name-for-width"
    assert sim.demo("sandbox", "create", "--name", long_name, "--keep").code == 0
    header, *rows = sim.demo("sandbox", "list").out.splitlines()
    assert header.startswith(f"{BOLD}{'NAME':<{len(long_name)}}{RESET}  ")
    assert plain(rows[-1]).startswith(f"{long_name}  navigator  {CLOCK_CREATED}  Ready")


# -- sandbox get --------------------------------------------------------------


def test_sandbox_get_prints_policy_yaml(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("sandbox", "get", "py-worker")
    assert result.code == 0 and result.err == ""
    lines = result.out.splitlines()
    assert lines[:6] == [
        TITLE.format("Sandbox:"),
        "",
        label("Id") + "5b0c2f8e-3d1a-4c7e-9a51-0f2b7c9d1e44",
        label("Name") + "py-worker",
        label("Namespace") + "navigator",
        label("Phase") + "Provisioning",  # uncoloured here, unlike sandbox list
    ]
    assert lines[6:9] == ["", TITLE.format("Policy:"), ""]
    assert plain(result.out).split("Policy:\n\n")[1] == (
        "  version: 1\n"
        "  inference:\n"
        "    allowed_routes:\n"
        "    - local\n"
        "  filesystem:\n"
        "    include_workdir: true\n"
        "    read_only:\n"
        "    - /usr\n"
        "    read_write:\n"
        "    - /sandbox\n"
        "  landlock:\n"
        "    compatibility: best_effort\n"
        "  network_policies:\n"
        "    nvidia:\n"
        "      endpoints:\n"
        "      - host: integrate.api.nvidia.com\n"
        "        port: 443\n"
        "      binaries:\n"
        "      - path: /usr/bin/curl\n"
    )
    # Keys and colons dimmed, values plain; on list lines only the marker is dimmed.
    assert f"    {DIM}include_workdir:{RESET} true\n" in result.out
    assert f"      {DIM}- {RESET}host: integrate.api.nvidia.com\n" in result.out
    assert result.transcript() == snapshot


def test_sandbox_get_custom_image_policy_quotes_and_omits_process(sim: NavSim) -> None:
    policy = plain(sim.demo("sandbox", "get", "gpu-trainer").out).split("Policy:\n\n")[1]
    assert "process:" not in policy
    assert "            method: '*'\n" in policy  # a plain * would be a YAML alias
    assert "        - allow:\n            method: POST\n" in policy
    default = plain(sim.demo("sandbox", "get", "dev-box").out)
    assert "  process:\n    run_as_user: sandbox\n    run_as_group: sandbox\n" in default
    policies = re.findall(r"^    (\w+):$", default.split("network_policies:\n")[1], re.M)
    assert policies == sorted(policies) and "claude_code" in policies and "vscode" in policies


# -- sandbox logs -------------------------------------------------------------

LOG_LINE = re.compile(
    r"\[(\d+)\.(\d{3})\] \[(gateway|sandbox)\s*\] \[(ERROR|WARN |INFO |DEBUG|TRACE)\] "
    r"\[([\w:]+)\] (.*)"
)


def test_sandbox_logs_line_format(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("sandbox", "logs", "dev-box")
    assert result.code == 0 and result.err == "" and ESC not in result.out
    lines = result.out.splitlines()
    assert all(LOG_LINE.fullmatch(line) for line in lines)
    stamps = [int(m[1]) * 1000 + int(m[2]) for m in map(LOG_LINE.fullmatch, lines) if m]
    assert stamps == sorted(stamps)  # oldest first
    assert lines[-1].endswith(
        "[sandbox] [WARN ] [navigator_sandbox::proxy] CONNECT action=deny "
        "binary=/usr/bin/python3 dst_host=pypi.org dst_port=443 policy=- "
        "reason=no_matching_policy"
    )  # fields sorted by key
    assert result.transcript() == snapshot


def test_sandbox_logs_filters(sim: NavSim) -> None:
    everything = sim.demo("sandbox", "logs", "dev-box").out.splitlines()
    assert sim.demo("sandbox", "logs", "dev-box", "-n", "2").out.splitlines() == everything[-2:]
    assert sim.demo("sandbox", "logs", "dev-box", "-n2").out.splitlines() == everything[-2:]
    assert sim.demo("sandbox", "logs", "dev-box", "-n", "0").out.splitlines() == everything
    sandbox_only = sim.demo("sandbox", "logs", "dev-box", "--source", "sandbox").out
    assert sandbox_only and "[gateway]" not in sandbox_only
    both = sim.demo("sandbox", "logs", "dev-box", "--source", "gateway", "--source", "sandbox")
    assert both.out.splitlines() == everything
    errors = sim.demo("sandbox", "logs", "gpu-trainer", "--level", "error").out.splitlines()
    assert len(errors) == 1 and "[ERROR]" in errors[0] and "ImagePullBackOff" in errors[0]
    warnings = sim.demo("sandbox", "logs", "gpu-trainer", "--level", "WARN").out
    assert "[WARN ]" in warnings and "[INFO ]" not in warnings


def test_sandbox_logs_since_warns_about_the_buffer(sim: NavSim) -> None:
    everything = sim.demo("sandbox", "logs", "dev-box").out.splitlines()
    recent = sim.demo("sandbox", "logs", "dev-box", "--since", "5m")
    assert recent.code == 0
    assert recent.out.splitlines() == everything[-3:]  # seeded in the last five minutes
    assert recent.err == (
        f"Warning: log buffer contains only the last {len(everything)} lines; "
        "--since results may be incomplete.\n"
    )


def test_sandbox_logs_empty_prints_nothing(sim: NavSim) -> None:
    result = sim.demo("sandbox", "logs", "py-worker", "--source", "sandbox")
    assert (result.code, result.out, result.err) == (0, "", "")


# -- providers and inference routes -------------------------------------------


def test_provider_list_shows_counts(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("provider", "list")
    assert result.code == 0
    header, *rows = result.out.splitlines()
    assert header == (
        f"{BOLD}{'NAME':<9}{RESET}  {BOLD}{'TYPE':<6}{RESET}  {BOLD}{'CREDENTIAL_KEYS':<16}{RESET}"
        f"  {BOLD}CONFIG_KEYS{RESET}"
    )
    assert rows == [
        f"anthropic  claude  {'1':<16}  0",
        f"gh         github  {'1':<16}  0",
        f"nvidia     nvidia  {'1':<16}  1",
    ]
    assert result.transcript() == snapshot
    assert sim.demo("provider", "list", "--names").out == "anthropic\ngh\nnvidia\n"
    assert sim.demo("provider", "list", "--offset", "3").out == "No providers found.\n"
    assert sim.demo("provider", "list", "--offset", "3", "--names").out == ""


def test_provider_get_lists_key_names_only(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("provider", "get", "nvidia")
    assert result.code == 0
    assert plain(result.out).splitlines()[2:] == [
        "  Id: c4a85e2d-1f7b-46c0-8e93-5d2b0f6a71e8",
        "  Name: nvidia",
        "  Type: nvidia",
        "  Credential keys: NVIDIA_API_KEY",
        "  Config keys: NVIDIA_BASE_URL",
    ]
    assert label("Config keys") + "<none>" in sim.demo("provider", "get", "gh").out
    assert result.transcript() == snapshot


def test_inference_list_fixed_widths(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("inference", "list")
    assert result.code == 0
    header, first, second, wide = result.out.split("\n")[:4]
    widths = (12, 16, 40, 30, 30, 8)
    names = ("NAME", "HINT", "BASE URL", "PROTOCOLS", "MODEL", "ENABLED")
    assert header == "  ".join(f"{BOLD}{n:<{w}}{RESET}" for n, w in zip(names, widths, strict=True))
    assert first == "  ".join(
        f"{cell:<{w}}"
        for cell, w in zip(
            (
                "qwzmke",
                "agent",
                "https://integrate.api.nvidia.com/v1",
                "openai_chat_completions",
                "nvidia/nemotron-3-nano-30b-a3b",
                "true",
            ),
            widths,
            strict=True,
        )
    )
    assert first.endswith("true    ") and second.endswith("true    ")  # last cell padded too
    # Values wider than their column are not cut; they push later columns right.
    assert "http://vllm.navigator.svc.cluster.local:8000/v1  openai_chat_completions," in wide
    assert wide.endswith("meta-llama/Llama-3.1-8B-Instruct  false   ")
    assert result.transcript() == snapshot
    empty = sim.demo("inference", "list", "--offset", "5")
    assert (empty.code, empty.out) == (0, "No inference routes found\n")


# -- sandbox create / delete ----------------------------------------------------


def test_sandbox_create_runs_the_command(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    result = sim.demo("sandbox", "create", "--name", "py-job", "--keep", "--", "echo", "hello")
    assert result.code == 0 and result.err == ""
    lines = result.out.split("\n")
    assert lines[:4] == ["", TITLE.format("Created sandbox:"), "", lines[3]]
    assert lines[3].startswith(label("Id")) and UUID4.fullmatch(lines[3][len(label("Id")) :])
    assert lines[4:6] == [label("Name") + "py-job", label("Namespace") + "navigator"]
    phases = [line for line in lines if line.startswith(label("Phase"))]
    assert 3 <= len(phases) <= 5
    assert set(phases[:-1]) == {label("Phase") + f"{YELLOW}Provisioning{FG_RESET}"}
    assert phases[-1] == label("Phase") + f"{GREEN}Ready{FG_RESET}"
    assert result.out.endswith(f"{GREEN}Ready{FG_RESET}\n\nhello\n")
    assert result.transcript() == snapshot


@pytest.mark.parametrize(
    ("command", "stdout"),
    [
        (["echo", '"two', 'words"'], "two words\n"),  # the remote shell re-parses quotes
        (["uname", "-a"], "Linux web "),
        (["python3", "--version"], "Python 3.12.3\n"),
        (["cat", "/etc/os-release"], 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\n'),
        (["ls", "/"], "bin\nboot\n"),
        (["true", "&&", "echo", "ok"], "ok\n"),
    ],
)
def test_sandbox_create_simulated_commands(sim: NavSim, command: list[str], stdout: str) -> None:
    result = sim.demo("sandbox", "create", "--name", "web", "--keep", "--", *command)
    assert result.code == 0 and result.err == ""
    assert result.out.split(f"{GREEN}Ready{FG_RESET}\n\n", 1)[1].startswith(stdout)


@pytest.mark.parametrize(
    ("command", "stderr", "status"),
    [
        (["false"], "", 1),
        (["nvidia-smi"], "bash: line 1: nvidia-smi: command not found\n", 127),
        (["cat", "/nope"], "cat: /nope: No such file or directory\n", 1),
    ],
)
def test_sandbox_create_failing_command_exits_1(
    sim: NavSim, command: list[str], stderr: str, status: int
) -> None:
    result = sim.demo("sandbox", "create", "--name", "web", "--keep", "--", *command)
    assert result.code == 1
    assert result.out.endswith(f"{GREEN}Ready{FG_RESET}\n\n")
    assert result.err == f"{stderr}Error:   × ssh exited with status exit status: {status}\n\n"
    assert "web" in sim.demo("sandbox", "list", "--names").out  # created before the failure


def test_sandbox_create_without_name_uses_the_id(sim: NavSim) -> None:
    result = sim.demo("sandbox", "create", "--keep")
    assert result.code == 0 and result.out.endswith(f"{GREEN}Ready{FG_RESET}\n\n")
    sandbox_id = plain(result.out).split("Id: ")[1].split("\n")[0]
    assert f"  Name: sandbox-{sandbox_id}\n" in plain(result.out)


def test_create_list_delete_visibility(sim: NavSim) -> None:
    assert sim.demo("sandbox", "create", "--name", "tmp-a", "--keep").code == 0
    listed = plain(sim.demo("sandbox", "list").out).splitlines()
    assert listed[-1] == f"tmp-a        navigator  {CLOCK_CREATED}  Ready"
    deleted = sim.demo("sandbox", "delete", "tmp-a", "dev-box")
    assert deleted.code == 0 and deleted.err == ""
    check = f"{BOLD}{ESC}32m✓{FG_RESET}{RESET}"
    assert deleted.out == f"{check} Deleted sandbox tmp-a\n{check} Deleted sandbox dev-box\n"
    again = sim.demo("sandbox", "delete", "tmp-a")  # still known to the gateway
    assert (again.code, again.out) == (0, f"{YELLOW}!{FG_RESET} Sandbox tmp-a not found\n")
    lingering = sim.demo("sandbox", "list")
    assert f"{'tmp-a':<11}  navigator  {CLOCK_CREATED}  {DIM}Deleting{RESET}" in lingering.out
    assert f"{DIM}Deleting{RESET}" in lingering.out.splitlines()[1]  # dev-box
    assert sim.demo("sandbox", "list", "--names").out == "gpu-trainer\npy-worker\n"


def test_create_without_keep_deletes_after_the_command(sim: NavSim) -> None:
    assert sim.demo("sandbox", "create", "--name", "once", "--", "true").code == 0
    assert f"{'once':<11}  navigator  {CLOCK_CREATED}  {DIM}Deleting{RESET}" in (
        sim.demo("sandbox", "list").out
    )
    assert "once" not in sim.demo("sandbox", "list", "--names").out


def test_created_sandbox_has_policy_and_logs(sim: NavSim) -> None:
    assert (
        sim.demo("sandbox", "create", "--name", "img", "--image", "python:3.12", "--keep").code == 0
    )
    policy = plain(sim.demo("sandbox", "get", "img").out)
    assert "  version: 1\n" in policy and "process:" not in policy  # --image drops process
    logs = sim.demo("sandbox", "logs", "img").out.splitlines()
    assert "Creating sandbox in Kubernetes" in logs[0] and "Sandbox is now ready" in logs[-3]
    assert all(LOG_LINE.fullmatch(line) for line in logs)


def test_create_with_a_policy_file(sim: NavSim, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "version: 1\nnetwork_policies:\n  pypi:\n    endpoints:\n"
        "    - {host: pypi.org, port: 443}\n    binaries:\n    - {path: /usr/bin/pip}\n",
        encoding="utf-8",
    )
    assert sim.demo("sandbox", "create", "--name", "pol", "--policy", str(policy)).code == 0
    assert plain(sim.demo("sandbox", "get", "pol").out).split("Policy:\n\n")[1] == (
        "  version: 1\n  network_policies:\n    pypi:\n      endpoints:\n"
        "      - host: pypi.org\n        port: 443\n      binaries:\n      - path: /usr/bin/pip\n"
    )
    missing = sim.demo("sandbox", "create", "--policy", str(tmp_path / "nope.yaml"))
    assert missing.code == 1 and missing.err.startswith("Error:   × failed to read sandbox policy")
    assert str(tmp_path / "nope.yaml") in missing.err.replace("\n  │ ", "")  # long paths wrap
    assert "╰─▶ No such file or directory (os error 2)\n\n" in missing.err
    policy.write_text("version: 1\nnetwork: {}\n", encoding="utf-8")
    unknown = sim.demo("sandbox", "create", "--policy", str(policy))
    assert unknown.code == 1 and "unknown field `network`, expected one of `version`" in unknown.err


def test_help_and_version(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    version = sim.run("--version")
    assert (version.code, version.out, version.err) == (0, "navigator 0.1.0\n", "")
    assert sim.run("sandbox", "list", "-V").out == "navigator-sandbox-list 0.1.0\n"
    root = sim.run("--help")
    assert root.code == 0 and root.err == ""
    assert "Usage: navigator [OPTIONS] [COMMAND]\n" in root.out
    get_help = sim.run("sandbox", "get", "--help")
    assert "Usage: navigator sandbox get [OPTIONS] <NAME>\n" in get_help.out
    assert sim.run("sandbox", "help", "get").out == get_help.out
    assert root.transcript() == snapshot(name="root")
    assert sim.run("sandbox", "logs", "-h").transcript() == snapshot(name="logs")
