"""What may record when `CI` is set: one rule, in the words every place uses.

The docs (README.md, scenarios/README.md), the pytest plugin's refusal and
`nav scenario record --help` quote `CI_RULE`, and a test holds them to it.
It lives here, not with the record modes, so the CLI can show it without
importing the harness.
"""

from __future__ import annotations

__all__ = ["CI_RULE"]

CI_RULE = (
    "When CI is set, recording from the simulator (`nav scenario record --sim`) still works:"
    " it reaches no network and reads no key. Recording from a real API is refused, and so is"
    " a pytest --record-mode other than none: a CI test run fails on a missing cassette"
    " instead of recording one it then throws away (and the option also drives"
    " pytest-recording's cassettes, which record from the network)."
)
"""What CI allows; `nav scenario record`, the plugin and the docs say it in these words."""
