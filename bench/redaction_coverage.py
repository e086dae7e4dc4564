"""Coverage of the redaction path on the test corpus: how many planted credentials it masks.

The corpus is `tests/scenarios/secret_kinds.py` (random values of every shape
the detector knows, every vendor row, credential headers and query
parameters by name, secrets inside base64 and escaped JSON). A credential
counts as covered in a path when none of its parts is left:

- `redact`: the text on its own, between other words (logs, errors, tool output);
- `stream`: cut in half between two events of every registered wire format;
- `scan`: the key scan finds it in a cassette line.

Run it on two commits to compare (an older commit is given the corpus's
vendor table from this tree). Usage: `.venv/bin/python bench/redaction_coverage.py`.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _corpus_imports() -> None:
    """Let an older commit's package load this tree's corpus (its vendor table module)."""
    sys.path.insert(0, str(ROOT))
    name = "navagent.core._secret_shapes"
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        spec = importlib.util.spec_from_file_location(name, ROOT / "core" / "_secret_shapes.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module


def main() -> None:
    _corpus_imports()
    from navagent.core.redaction import redact
    from navagent.core.wire_formats import FORMAT_IDS
    from navagent.fixtures.harness import scan_text

    try:
        from navagent.fixtures.harness.cassettes._body_redaction import redact_sse
        from navagent.fixtures.provider.wire._kit import kit_for
    except ModuleNotFoundError:  # main after the modules moved into subpackages
        redact_sse = importlib.import_module(
            "navagent.fixtures.harness.cassettes._body_redaction"
        ).redact_sse
        kit_for = importlib.import_module("navagent.fixtures.provider.wire._kit").kit_for
    from tests.scenarios.secret_kinds import planted_secrets

    corpus = planted_secrets(random.Random(27))
    covered = {"redact": 0, "stream": 0, "scan": 0}
    missed: dict[str, list[str]] = {key: [] for key in covered}
    for planted in corpus:
        text = f"the logs say {planted.text} there"
        if not any(part in redact(text) for part in planted.parts):
            covered["redact"] += 1
        else:
            missed["redact"].append(planted.kind)
        cut = len("the logs say ") + len(planted.text) // 2
        streams = [
            redact_sse(b"".join(kit_for(f).text((text[:cut], text[cut:])).events).decode())
            for f in FORMAT_IDS
        ]
        if all(not any(part in s for part in planted.parts) for s in streams):
            covered["stream"] += 1
        else:
            missed["stream"].append(planted.kind)
        if scan_text(f"note: {planted.text.splitlines()[0]}\n"):
            covered["scan"] += 1
        else:
            missed["scan"].append(planted.kind)
    kinds = len({planted.kind for planted in corpus})
    print(f"corpus: {len(corpus)} planted credentials of {kinds} named kinds")
    for path, count in covered.items():
        print(f"{path}: {count} of {len(corpus)} covered ({100 * count / len(corpus):.0f}%)")
        if missed[path]:
            print("  missed:", ", ".join(sorted(set(missed[path]))))


if __name__ == "__main__":
    main()
