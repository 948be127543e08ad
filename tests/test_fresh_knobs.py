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


def notices(app: SealtopApp) -> list[tuple[str, str]]:
    return [(n.message, n.severity) for n in app._notifications]


async def test_budget_prompt_refuses_a_typo_and_keys_at_their_least_say_so():
    eng = FakeEngine()
    app = SealtopApp("live", engine_factory=lambda: eng, autofeed=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        assert eng.knobs["memory_budget"] == 8 * GiB
        for typo in ("banana", "-3", "12 parsecs"):
            said = len(notices(app))
            app.prompt_knob("memory_budget")
            await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
            await pilot.press(*typo, "enter")
            await wait_for(pilot, lambda: len(notices(app)) > said)
            assert eng.knobs["memory_budget"] == 8 * GiB, typo
            assert notices(app)[-1][1] == "error" and "memory_budget" in notices(app)[-1][0], typo
        app.prompt_knob("memory_budget")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"0", "enter")
        await wait_for(pilot, lambda: eng.knobs["memory_budget"] == 0)
        assert notices(app)[-1][0] == "memory_budget → unlimited"

        # partition_workers 2 -> 1, then w again: at its least, a warning, no knob change
        await wait_for(pilot, lambda: app.state.knobs.get("partition_workers") == 2)
        await pilot.press("w")
        await wait_for(pilot, lambda: app.state.knobs.get("partition_workers") == 1)
        sent = list(eng.knobs.items())
        said = len(notices(app))
        await pilot.press("w")
        await wait_for(pilot, lambda: len(notices(app)) > said)
        assert list(eng.knobs.items()) == sent
        message, severity = notices(app)[-1]
        assert severity == "warning" and "partition_workers" in message and "least" in message
