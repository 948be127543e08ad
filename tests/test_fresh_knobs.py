"""Knob keys and prompts as a first operator meets them: a budget typed wrong is refused (it
read as 0, no budget at all, so "banana" took the limit off), 0 says "unlimited", and a key at
its knob's least says so instead of doing nothing."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from app_pilot import wait_for  # noqa: E402
from test_app_fakes import FakeEngine  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.screens.prompt import PromptScreen  # noqa: E402

GiB = 2**30


def record_notices(app: SealtopApp) -> list[tuple[str, str]]:
    """Every notice the app gives from now on, as (message, severity), kept: the app's own list
    drops a notice once its timeout passes, so counting it (a loaded machine's seconds between
    two notices) could wait for one more notice than it was going to hold."""
    said: list[tuple[str, str]] = []
    notify = app.notify

    def keep(message, *args, severity="information", **kwargs):
        said.append((str(message), severity))
        return notify(message, *args, severity=severity, **kwargs)

    app.notify = keep  # type: ignore[method-assign]
    return said


async def test_budget_prompt_refuses_a_typo_and_keys_at_their_least_say_so():
    eng = FakeEngine()
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0)
    said = record_notices(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        assert eng.knobs["memory_budget"] == 8 * GiB
        for typo in ("banana", "-3", "12 parsecs"):
            n = len(said)
            app.live.prompt_knob("memory_budget")
            await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
            await pilot.press(*typo, "enter")
            await wait_for(pilot, lambda: len(said) > n)  # the answer's notice, which it reads
            assert eng.knobs["memory_budget"] == 8 * GiB, typo
            assert said[-1][1] == "error" and "memory_budget" in said[-1][0], (typo, said[n:])
        n = len(said)
        app.live.prompt_knob("memory_budget")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"0", "enter")
        await wait_for(pilot, lambda: eng.knobs["memory_budget"] == 0 and len(said) > n)
        assert said[-1][0] == "memory_budget → unlimited"

        # partition_workers 2 -> 1, then w again: at its least, a warning, no knob change
        await wait_for(pilot, lambda: app.state.knobs.get("partition_workers") == 2)
        await pilot.press("w")
        await wait_for(pilot, lambda: app.state.knobs.get("partition_workers") == 1)
        sent = list(eng.knobs.items())
        n = len(said)
        await pilot.press("w")
        await wait_for(pilot, lambda: len(said) > n)
        assert list(eng.knobs.items()) == sent
        message, severity = said[-1]
        assert severity == "warning" and "partition_workers" in message and "least" in message
