"""The conformance corpora (real provider streams with SDK oracles): where they are, how to load.

They live outside the repository (third-party recordings, not copied here),
under `shared/conformance/`: `real/` (each `.json` holds the body as `sse`)
and `peer/` (a `.json` sidecar beside each `.sse` body). Found through
`NAV_CONFORMANCE_DIR` (the `real` folder; `peer` is its sibling), else
`<repo>/../shared/conformance`, else the same path next to the main checkout
when this is a git worktree.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.streams import ROOT, random_chunks

PROVIDERS = ("openai", "anthropic")


def conformance_root() -> tuple[Path | None, str]:
    """Return the `shared/conformance` folder, or None and the reason it was not found."""
    if env := os.environ.get("NAV_CONFORMANCE_DIR"):
        path = Path(env)
        if not path.is_dir():
            return None, f"NAV_CONFORMANCE_DIR={env} is no folder"
        return path.parent, ""
    candidates = [ROOT.parent / "shared" / "conformance"]
    git = ROOT / ".git"
    if git.is_file():  # a worktree: .git says "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(git.read_text(encoding="utf-8").partition(":")[2].strip())
        common = gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()
        candidates.append(common.resolve().parent.parent / "shared" / "conformance")
    for path in candidates:
        if (path / "real").is_dir():
            return path, ""
    return None, f"conformance corpus not found (looked in {', '.join(map(str, candidates))})"


ROOT_DIR, MISSING = conformance_root()
REAL = ROOT_DIR / "real" if ROOT_DIR else None
PEER = ROOT_DIR / "peer" if ROOT_DIR else None


@dataclass(frozen=True)
class Recording:
    """One recorded stream: its bytes and what the official SDK made of them."""

    name: str
    """`<provider>/<stem>`."""
    provider: str
    body: bytes
    expected: dict[str, Any]


def corpus_files(corpus: Path | None, folder: str) -> list[Any]:
    """pytest params, one per `.json` record under `corpus/folder` (skips when absent)."""
    if corpus is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=MISSING), id="no-corpus")]
    if not (corpus / folder).is_dir():
        reason = f"{corpus / folder} does not exist"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id=f"no-{folder}")]
    files = sorted((corpus / folder).rglob("*.json"))
    return [pytest.param(path, id=f"{path.parent.name}/{path.stem}") for path in files]


def load(path: Path) -> Recording:
    """Read a record of either corpus."""
    record = json.loads(path.read_text(encoding="utf-8"))
    sse = record.get("sse")
    body = sse.encode("utf-8") if sse is not None else path.with_suffix(".sse").read_bytes()
    provider = record.get("provider") or path.parent.name
    return Recording(f"{provider}/{path.stem}", provider, body, record["expected"])


CHUNKINGS = ("whole", "1-byte", "random-1..97", "random-1..4096")


def chunked(body: bytes, chunking: str) -> list[bytes]:
    """The body cut the way `chunking` names (fixed seeds, so failures reproduce)."""
    if chunking == "whole":
        return [body]
    if chunking == "1-byte":
        return [body[i : i + 1] for i in range(len(body))]
    if chunking == "random-1..97":
        return random_chunks(body, seed=97, max_size=97)
    if chunking == "random-1..4096":
        return random_chunks(body, seed=4096, max_size=4096)
    raise ValueError(chunking)
