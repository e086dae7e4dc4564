"""Each stream's metrics reuse their labelled children (issue 44: CPU per request).

prometheus-client's `labels()` validates and locks on every call; a stream
records seven labelled values, so the gateway looks each label set up once.
"""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY
from prometheus_client.metrics import MetricWrapperBase

from navagent.gateway import metrics


def _facts(route: str) -> metrics.StreamFacts:
    return metrics.StreamFacts(
        hint_label="children-hint",
        route=route,
        protocol="openai_chat_completions",
        outcome="ok",
        duration_s=0.2,
        time_to_first_delta_s=0.02,
        tokens=[("input", 9), ("output", 1), ("cache_read", 0)],
        upstream=[("attempt", route, "200")],
    )


def _finished(route: str) -> float:
    value = REGISTRY.get_sample_value(
        "nav_gateway_streams_finished_total",
        {
            "hint": "children-hint",
            "route": route,
            "protocol": "openai_chat_completions",
            "outcome": "ok",
        },
    )
    return value or 0.0


def test_a_label_set_is_looked_up_once_and_every_stream_still_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metrics, "_enabled", True)
    looked_up: list[tuple[str, tuple[str, ...]]] = []
    real = MetricWrapperBase.labels

    def counting(self: MetricWrapperBase, *values: str) -> MetricWrapperBase:
        looked_up.append((self._name, values))
        return real(self, *values)

    monkeypatch.setattr(MetricWrapperBase, "labels", counting)
    before = _finished("children-a"), _finished("children-b")

    for route in ("children-a", "children-a", "children-a", "children-b"):
        metrics.record_admitted("children-hint")
        metrics.record_finished(_facts(route), admitted=True)

    assert (_finished("children-a"), _finished("children-b")) == (before[0] + 3, before[1] + 1)
    assert len(looked_up) == len(set(looked_up))  # every label set once, however many streams
    assert ("nav_gateway_tokens", ("children-b", "output")) in looked_up
