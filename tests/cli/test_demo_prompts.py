"""Every example prompt the user is shown works: `nav agent --demo -p "..."` for real.

The prompts come from README.md's quick start, the demo banner and `/help`;
each runs through the installed `nav` (simulated model, in-process gateway,
nav-sim), and the answer must name the right sandbox and the fact that
matters. A create or delete is run with `--yes` (it happens) and without it
(`-p` has no one to ask: the answer must say it was declined).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from navagent.cli.demo import DEMO_PROMPTS, demo_banner
from navagent.cli.slash import SlashState, handle_slash_command
from tests.cli.harness import run_nav

pytestmark = pytest.mark.slow  # each test starts `nav` (or a gateway) as a process

ROOT = Path(__file__).parents[2]
FACTS: dict[str, tuple[str, ...]] = {
    "list my sandboxes": ("dev-box", "gpu-trainer (Error)", "py-worker (Provisioning)"),
    "why is gpu-trainer failing? show its logs": (
        "gpu-trainer is failing",
        "ImagePullBackOff",
    ),
    "create a sandbox named scratch running echo hello": ("Created sandbox scratch", "hello"),
    "delete py-worker": ("Deleted sandbox py-worker",),
    "list the providers and inference routes": ("anthropic", "nvidia", "qwzmke", "claude-route"),
    # Likely future suggestions (e.g. in /help), ready so adding one needs no test change:
    "which sandbox is failing and why?": ("gpu-trainer is failing", "ImagePullBackOff"),
    "what's wrong with gpu-trainer?": ("gpu-trainer is failing", "ImagePullBackOff"),
    "show the logs of gpu-trainer": ("gpu-trainer", "ImagePullBackOff"),
    "is the cluster up?": ("demo", "Connected"),
    "list the providers": ("anthropic", "gh", "nvidia"),
    "which inference routes are configured?": ("qwzmke", "claude-route", "vllm-local"),
    "show me dev-box": ("dev-box", "Ready"),
}
"""What the answer to each suggested prompt must say."""
CHANGES = {"create": "scratch", "delete": "py-worker"}


def readme_prompts() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r'"([^"]+)"', quick_start.split("Try ", 1)[1].split(";", 1)[0]))


def banner_prompts() -> set[str]:
    banner = demo_banner(provider="openai")
    tries = banner.split("Try:\n", 1)[1].split("\nType /help", 1)[0]
    return {line.strip() for line in tries.splitlines() if line.strip()}


def help_prompts() -> set[str]:
    """Prompts `/help` suggests: quoted requests, or lines equal to a demo prompt."""
    result, _ = handle_slash_command("/help", SlashState())
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(result.output)
    text = out.getvalue()
    quoted = set(re.findall(r'"([^"/]{6,})"', text))
    listed = {line.strip() for line in text.splitlines() if line.strip() in DEMO_PROMPTS}
    return quoted | listed


SUGGESTED = sorted(readme_prompts() | banner_prompts() | help_prompts())


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {
        key: value
        for key, value in os.environ.items()
        if key not in {"NAVIGATOR_CLUSTER", "NAV_AGENT_GATEWAY", "NAV_AGENT_CLI", "NAV_SIM_FAULT"}
    }
    return {**base, "NAV_AGENT_STATE_DIR": str(tmp_path / "state")}


def test_the_suggested_prompts_are_found_and_all_have_expected_facts() -> None:
    assert set(DEMO_PROMPTS) <= set(SUGGESTED)
    assert readme_prompts() and banner_prompts()
    unknown = set(SUGGESTED) - set(FACTS)
    assert not unknown, f"add the facts their answers must contain to FACTS: {unknown}"


@pytest.mark.parametrize("prompt", SUGGESTED)
def test_each_suggested_prompt_answers_with_its_facts(prompt: str, env) -> None:
    changes = next((name for verb, name in CHANGES.items() if prompt.startswith(verb)), None)
    result = run_nav("agent", "--demo", *(["--yes"] if changes else []), "-p", prompt, env=env)
    assert result.returncode == 0, result.stderr
    for fact in FACTS[prompt]:
        assert fact in result.stdout, f"{prompt!r}: {fact!r} not in {result.stdout!r}"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("prompt", [p for p in SUGGESTED if p.startswith(tuple(CHANGES))])
def test_a_change_without_yes_is_declined_and_said_so(prompt: str, env) -> None:
    result = run_nav("agent", "--demo", "--demo-provider", "anthropic", "-p", prompt, env=env)
    assert result.returncode == 0, result.stderr
    name = next(name for verb, name in CHANGES.items() if prompt.startswith(verb))
    assert "was declined, not run" in result.stdout and name in result.stdout
    assert "--yes" in result.stdout
    assert "Created sandbox" not in result.stdout and "Deleted sandbox" not in result.stdout


def test_the_diagnosis_prompt_works_on_the_anthropic_wire_format_too(env) -> None:
    result = run_nav(
        "agent",
        "--demo",
        "--demo-provider",
        "anthropic",
        "-p",
        "which sandbox is failing and why?",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "gpu-trainer is failing" in result.stdout and "ImagePullBackOff" in result.stdout
    assert "→ sandbox_list" in result.stderr and "→ sandbox_logs name=gpu-trainer" in result.stderr
