"""Every failure `nav-sim` reproduces: cluster resolution, gateway down, gRPC statuses, clap.

Runtime errors are miette reports on stderr (exit 1, wrapped at 78 columns,
trailing blank line); argument errors are clap's texts (exit 2).
"""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.sim.runner import NavSim

ARGS = {
    "cluster status": ["cluster", "status"],
    "sandbox list": ["sandbox", "list"],
    "sandbox get": ["sandbox", "get", "dev-box"],
    "sandbox delete": ["sandbox", "delete", "dev-box"],
    "sandbox logs": ["sandbox", "logs", "dev-box"],
    "provider list": ["provider", "list"],
    "provider get": ["provider", "get", "gh"],
    "inference list": ["inference", "list"],
}
"""The eight commands that report cluster errors plainly (create differs)."""

UNKNOWN_CLUSTER = (
    "Error:   × Unknown cluster 'staging'.\n"
    "  │ Deploy it first: nav cluster admin deploy --name staging\n"
    "  │ Or list available clusters: nav cluster list\n\n"
)
NO_ACTIVE_CLUSTER = (
    "Error:   × No active cluster.\n"
    "  │ Set one with: nav cluster use <name>\n"
    "  │ Or deploy a new cluster: nav cluster admin deploy\n\n"
)
TRANSPORT_ERROR = (
    "Error:   × transport error\n"
    "  ├─▶ tcp connect error\n"
    "  ├─▶ tcp connect error\n"
    "  ╰─▶ Connection refused (os error 111)\n\n"
)
BOOTSTRAP_ERROR = (
    "Error:   × Cluster not reachable and bootstrap requires confirmation from an\n"
    "  │ interactive terminal.\n"
    "  │ Run 'navigator cluster admin deploy' first, then retry.\n\n"
)


def not_found(what: str) -> str:
    return (
        f'Error:   × status: NotFound, message: "{what} not found", details: [], metadata:\n'
        "  │ MetadataMap { headers: {} }\n\n"
    )


# -- cluster resolution -------------------------------------------------------


@pytest.mark.parametrize("command", list(ARGS))
def test_unknown_cluster(sim: NavSim, command: str) -> None:
    result = sim.run("--cluster", "staging", *ARGS[command])
    assert (result.code, result.out, result.err) == (1, "", UNKNOWN_CLUSTER)


@pytest.mark.parametrize("command", list(ARGS))
def test_no_active_cluster(sim: NavSim, command: str) -> None:
    result = sim.run(*ARGS[command])
    assert (result.code, result.out, result.err) == (1, "", NO_ACTIVE_CLUSTER)


@pytest.mark.parametrize("command", [c for c in ARGS if c != "cluster status"])
def test_offline_gateway(sim: NavSim, command: str) -> None:
    result = sim.run("--cluster", "offline", *ARGS[command])
    assert (result.code, result.out, result.err) == (1, "", TRANSPORT_ERROR)


def test_offline_cluster_status_prints_header_then_fails(sim: NavSim) -> None:
    result = sim.run("-c", "offline", "cluster", "status")
    assert result.code == 1
    assert result.out == (
        "\x1b[1m\x1b[36mServer Status\x1b[39m\x1b[0m\n\n"
        "  \x1b[2mCluster:\x1b[0m offline\n"
        "  \x1b[2mServer:\x1b[0m https://127.0.0.1:8081\n"
    )
    assert result.err == (
        "Error:   × client error (Connect)\n"
        "  ├─▶ tcp connect error\n"
        "  ╰─▶ Connection refused (os error 111)\n\n"
    )


@pytest.mark.parametrize("cluster", [["--cluster", "staging"], ["-c", "offline"], []])
def test_sandbox_create_cluster_failures_give_the_bootstrap_error(
    sim: NavSim, cluster: list[str]
) -> None:
    result = sim.run(*cluster, "sandbox", "create", "--keep", "--", "echo", "hi")
    assert (result.code, result.out, result.err) == (1, "", BOOTSTRAP_ERROR)


def test_cluster_from_env_and_flag_after_the_subcommand(sim: NavSim) -> None:
    from_env = sim.run("sandbox", "list", "--names", NAVIGATOR_CLUSTER="demo")
    assert (from_env.code, from_env.out) == (0, "dev-box\ngpu-trainer\npy-worker\n")
    after = sim.run("sandbox", "list", "--names", "--cluster", "demo")
    assert after.out == from_env.out
    flag_wins = sim.run("-c", "offline", "sandbox", "list", NAVIGATOR_CLUSTER="demo")
    assert flag_wins.err == TRANSPORT_ERROR
    blank_env = sim.run("sandbox", "list", NAVIGATOR_CLUSTER="  ")
    assert blank_env.err == NO_ACTIVE_CLUSTER


# -- gateway statuses -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["sandbox", "get", "nope"], "sandbox"),
        (["sandbox", "logs", "nope"], "sandbox"),
        (["sandbox", "delete", "nope"], "sandbox"),
        (["provider", "get", "nope"], "provider"),
    ],
)
def test_unknown_name_is_not_found(sim: NavSim, args: list[str], what: str) -> None:
    result = sim.demo(*args)
    assert (result.code, result.out, result.err) == (1, "", not_found(what))


def test_delete_stops_at_the_first_unknown_name(sim: NavSim) -> None:
    result = sim.demo("sandbox", "delete", "py-worker", "nope", "dev-box")
    assert result.code == 1 and result.err == not_found("sandbox")
    assert result.out.count("Deleted sandbox") == 1
    phases = sim.demo("sandbox", "list").out
    assert "py-worker" in phases and "Deleting" in phases.splitlines()[3]
    assert "Ready" in phases.splitlines()[1]  # dev-box untouched


def test_duplicate_create_is_already_exists(sim: NavSim) -> None:
    result = sim.demo("sandbox", "create", "--name", "dev-box", "--keep")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        'Error:   × status: AlreadyExists, message: "sandbox already exists", details: [],\n'
        "  │ metadata: MetadataMap { headers: {} }\n\n"
    )


@pytest.mark.parametrize("name", ["Dev-Box", "my_box", "x" * 64, "-lead", "trail-"])
def test_names_kubernetes_rejects(sim: NavSim, name: str) -> None:
    result = sim.demo("sandbox", "create", f"--name={name}", "--keep")  # `=`: "-lead" is a value
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith(
        'Error:   × status: Internal, message: "create sandbox in kubernetes failed: ApiError:'
    )
    body = result.err.replace("\n  │ ", " ")
    assert f'Invalid value: \\"{name}\\"' in body
    assert ("must be no more than 63 characters" in body) == (len(name) > 63)
    assert all(len(line) <= 78 for line in result.err.removeprefix("Error: ").splitlines())
    assert name not in sim.demo("sandbox", "list", "--names").out


def test_invalid_name_snapshot(sim: NavSim, snapshot: SnapshotAssertion) -> None:
    assert sim.demo("sandbox", "create", "--name", "Bad_Name").transcript() == snapshot


@pytest.mark.parametrize(("word", "kind"), [("codex", "codex"), ("/usr/bin/glab", "gitlab")])
def test_missing_provider_fails_before_creating(sim: NavSim, word: str, kind: str) -> None:
    result = sim.demo("sandbox", "create", "--name", "agent-box", "--keep", "--", word, "run")
    assert (result.code, result.out) == (1, "")
    text = result.err.replace("\n  │ ", " ")
    assert text == (
        f"Error:   × missing required providers: {kind}. Create them first with `nav provider "
        "create --type <type> --name <name> --from-existing`, or set them up manually from "
        "inside the sandbox\n\n"
    )
    assert "agent-box" not in sim.demo("sandbox", "list", "--names").out


def test_configured_provider_type_passes_the_check(sim: NavSim) -> None:
    # `gh` needs a github provider, which the seed has; the command itself is not installed.
    result = sim.demo("sandbox", "create", "--name", "gh-box", "--keep", "--", "gh", "auth")
    assert result.code == 1 and "gh: command not found" in result.err


def test_unknown_attached_provider(sim: NavSim) -> None:
    result = sim.demo("sandbox", "create", "--name", "p", "--provider", "openai", "--keep")
    assert result.code == 1
    assert "status: FailedPrecondition, message: \"provider 'openai' not found\"" in result.err
    assert sim.demo("sandbox", "create", "--name", "p", "--provider", "nvidia").code == 0


@pytest.mark.parametrize(
    ("since", "message"),
    [
        ("", "empty duration string"),
        ("5", "invalid duration: 5 (expected e.g. 5m, 1h, 30s)"),
        ("5d", "unknown duration unit: d (use s, m, or h)"),
    ],
)
def test_bad_since_value(sim: NavSim, since: str, message: str) -> None:
    result = sim.demo("sandbox", "logs", "dev-box", "--since", since)
    assert (result.code, result.out, result.err) == (1, "", f"Error:   × {message}\n\n")


# -- clap -----------------------------------------------------------------------

TRY_HELP = "\n\nFor more information, try '--help'.\n"


@pytest.mark.parametrize(
    ("args", "missing", "usage"),
    [
        (["sandbox", "get"], "<NAME>", "navigator sandbox get <NAME>"),
        (["sandbox", "logs", "-n", "5"], "<NAME>", "navigator sandbox logs -n <N> <NAME>"),
        (["sandbox", "delete"], "<NAME>...", "navigator sandbox delete <NAME>..."),
        (["provider", "get"], "<NAME>", "navigator provider get <NAME>"),
    ],
)
def test_missing_positional_is_a_clap_error(
    sim: NavSim, args: list[str], missing: str, usage: str
) -> None:
    result = sim.demo(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"error: the following required arguments were not provided:\n  {missing}\n\n"
        f"Usage: {usage}" + TRY_HELP
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("x", "invalid digit found in string"),
        ("4294967296", "4294967296 is not in 0..=4294967295"),
        ("", "cannot parse integer from empty string"),
    ],
)
def test_bad_number_is_a_clap_error(sim: NavSim, value: str, reason: str) -> None:
    result = sim.demo("sandbox", "logs", "dev-box", "-n", value)
    assert (result.code, result.out) == (2, "")
    assert result.err == f"error: invalid value '{value}' for '-n <N>': {reason}" + TRY_HELP


@pytest.mark.parametrize(
    ("args", "err"),
    [
        (
            ["sandbox", "logs", "dev-box", "-n", "-5"],
            "error: unexpected argument '-5' found\n\n  tip: to pass '-5' as a value, use '-- -5'"
            "\n\nUsage: navigator sandbox logs [OPTIONS] <NAME>",
        ),
        (
            ["sandbox", "list", "--limt", "5"],
            "error: unexpected argument '--limt' found\n\n  tip: a similar argument exists: "
            "'--limit'\n\nUsage: navigator sandbox list --limit <LIMIT>",
        ),
        (
            ["sandbox", "list", "--ids", "--names"],
            "error: the argument '--ids' cannot be used with '--names'\n\n"
            "Usage: navigator sandbox list --ids",
        ),
        (
            ["sandbox", "lst"],
            "error: unrecognized subcommand 'lst'\n\n  tip: a similar subcommand exists: 'list'"
            "\n\nUsage: navigator sandbox [OPTIONS] <COMMAND>",
        ),
        (
            ["sandbox", "list", "--limit"],
            "error: a value is required for '--limit <LIMIT>' but none was supplied",
        ),
        (
            ["sandbox", "create", "--keep", "--keep"],
            "error: the argument '--keep' cannot be used multiple times\n\n"
            "Usage: navigator sandbox create [OPTIONS] [COMMAND]...",
        ),
        (
            ["sandbox", "get", "a", "b"],
            "error: unexpected argument 'b' found\n\nUsage: navigator sandbox get [OPTIONS] <NAME>",
        ),
        (
            ["sandbox", "--verbose"],
            "error: 'navigator sandbox' requires a subcommand but one was not provided\n"
            "  [subcommands: create, get, list, delete, connect, logs, help]\n\n"
            "Usage: navigator sandbox [OPTIONS] <COMMAND>",
        ),
    ],
)
def test_usage_errors(sim: NavSim, args: list[str], err: str) -> None:
    result = sim.demo(*args)
    assert (result.code, result.out, result.err) == (2, "", err + TRY_HELP)


def test_group_without_subcommand_prints_help_on_stderr(sim: NavSim) -> None:
    result = sim.demo("sandbox")
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("Manage sandboxes\n\nUsage: navigator sandbox [OPTIONS] <COMMAND>")
    assert result.err == sim.run("sandbox", "--help").out


def test_unsimulated_command(sim: NavSim) -> None:
    result = sim.demo("sandbox", "connect", "dev-box")
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("nav-sim: 'navigator sandbox connect' is not simulated")
