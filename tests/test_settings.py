"""engine/settings.py: each setting declared once, and everything that lists settings derived
from it -- the config file's tables and checks, KNOBS, Engine.set_knob's dispatch, the
exporter's gauges, the farm's slot resize, and the console's keys, prompts, save and header."""

from __future__ import annotations

import dataclasses
import tomllib
from types import SimpleNamespace

import pytest
import tomlkit
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from engine import config, settings
from engine.config import ConfigError, EngineConfig, parse_config
from engine.settings import GiB, Knob, Setting

UNITS = {"", "bytes", "s"}


# ---- the table and the dataclass ---------------------------------------------------------------


def test_the_table_and_the_dataclass_agree_field_for_field():
    fields = dataclasses.fields(EngineConfig)
    assert [s.name for s in settings.SETTINGS] == [f.name for f in fields]
    defaults = EngineConfig()
    for s in settings.SETTINGS:
        assert s.default == getattr(defaults, s.name), s.name
        assert s.check(s.default) == s.default, s.name  # a default passes its own check
        assert s.doc.strip() and "\n" not in s.doc, s.name
        assert s.unit in UNITS, s.name
    assert config.KEYS == tuple(f.name for f in fields)
    assert config.KNOBS == settings.KNOBS == tuple(
        s.name for s in settings.SETTINGS if s.knob is not None)
    assert set(config._LAYOUT) == {"engine", "paths", "telemetry", "jobs", "cluster"}
    assert sorted(k for keys in config._LAYOUT.values() for k in keys) == sorted(config.KEYS)


def test_a_file_of_every_default_in_its_table_reads_back_as_the_defaults():
    doc = tomlkit.document()
    for s in settings.SETTINGS:
        if s.table not in doc:
            doc[s.table] = tomlkit.table()
        doc[s.table][s.name] = s.default
    assert parse_config(tomlkit.dumps(doc)) == EngineConfig()


@pytest.mark.parametrize("s", settings.SETTINGS, ids=lambda s: s.name)
def test_a_setting_in_another_table_is_an_unknown_key(s: Setting):
    other = next(t for t in config._LAYOUT if t != s.table)
    with pytest.raises(ConfigError, match=rf"^f\.toml:2: {other}\.{s.name}: unknown key"):
        parse_config(f"[{other}]\n{s.name} = 1\n", "f.toml")


# ---- every live knob reaches every place -------------------------------------------------------


def _live() -> list[Setting]:
    return settings.live_settings()


def test_every_live_knob_has_an_applier_and_its_guard_on_the_engine():
    from engine.pipeline.engine import Engine

    assert _live(), "no live knob in the table"
    for s in _live():
        assert s.knob is not None
        assert callable(getattr(Engine, s.knob.apply, None)), s.name
        assert not s.knob.guard or callable(getattr(Engine, s.knob.guard, None)), s.name
        assert isinstance(s.default, int) and s.knob.least >= 1 and s.knob.step >= 1


def test_every_live_knob_has_its_two_keys_on_each_dashboard_and_the_hosts_view():
    from app.screens.dashboard import DashboardScreen
    from app.screens.hosts import HostDashboardScreen, HostsScreen

    for screen, action, prefix, want in (
        (DashboardScreen, "app.knob", "", lambda k: True),
        (HostDashboardScreen, "host_knob", "host-", lambda k: True),
        (HostsScreen, "knob", "hosts-", lambda k: k.hosts_view),
    ):
        by_id = {b.id: b for b in screen.BINDINGS}
        for s in _live():
            k = s.knob
            assert k is not None
            for direction, key, suffix in ((-1, k.keys[0], "down"), (1, k.keys[1], "up")):
                bid = f"{prefix}{k.label.lower()}-{suffix}"
                if not want(k):
                    assert bid not in by_id
                    continue
                b = by_id[bid]
                assert (b.key, b.action) == (key, f"{action}('{s.name}', {direction})"), bid


def test_the_tuning_keys_and_texts_are_the_ones_operators_know():
    """The texts the footer, help and snapshots show, spelt out once more here."""
    from app.screens.dashboard import DashboardScreen

    got = [(b.key, b.description, b.show, b.tooltip, b.id) for b in DashboardScreen.BINDINGS
           if "knob(" in b.action]
    assert got == [
        ("w", "Workers −1", False, "", "workers-down"),
        ("W", "Workers+", True, "Workers +1", "workers-up"),
        ("c", "Channel −1", False, "", "channel-down"),
        ("C", "Channel +1", False, "", "channel-up"),
        ("m", "Budget −1 GiB", False, "", "budget-down"),
        ("M", "Budget +1 GiB", False, "", "budget-up"),
    ]
    from app.screens.hosts import HostDashboardScreen, HostsScreen

    got = [(b.key, b.description, b.show, b.id) for b in HostsScreen.BINDINGS
           if "knob(" in b.action]
    assert got == [
        ("W", "Workers +1", True, "hosts-workers-up"),
        ("w", "Workers −1", True, "hosts-workers-down"),
        ("C", "Channel +1", True, "hosts-channel-up"),
        ("c", "Channel −1", True, "hosts-channel-down"),
    ]
    got = [(b.key, b.description, b.show, b.id) for b in HostDashboardScreen.BINDINGS
           if "knob(" in b.action]
    assert got == [
        ("W", "Workers+", True, "host-workers-up"), ("w", "Workers −1", False, "host-workers-down"),
        ("C", "Channel +1", False, "host-channel-up"),
        ("c", "Channel −1", False, "host-channel-down"),
        ("M", "Budget +1 GiB", False, "host-budget-up"),
        ("m", "Budget −1 GiB", False, "host-budget-down"),
    ]


def test_every_live_knob_has_a_prompt_a_gauge_a_header_place_and_is_saved(tmp_path):
    from app import knobs as console_knobs
    from app.configsave import save_knobs, saved_knobs
    from app.live_source import LiveSource

    src = _source()
    cmds = {title: fn for title, _, fn in LiveSource.commands(src)}  # type: ignore[arg-type]
    values = {s.name: s.knob.least + 2 * s.knob.step for s in _live() if s.knob}
    x = _exporter_after({"config": values}, {})
    path = tmp_path / "sealtop.toml"
    assert sorted(save_knobs(path, values)) == sorted(values)
    saved = tomllib.loads(path.read_text())
    for s in _live():
        assert cmds[f"Set {s.name}…"]() == s.name
        assert s.name in saved_knobs()
        assert saved[s.table][s.name] == values[s.name]
        assert _gauge(x, s.name) == values[s.name]
        label = s.knob.label.lower() if s.knob else ""
        assert console_knobs.header_text(s.name, values).startswith(f"{label} ")
        assert console_knobs.header_text(s.name, {}) in (f"{label} –", f"{label} unlimited")


def _source() -> SimpleNamespace:
    """What LiveSource.commands reads of its console: its prompt gives back the knob's name."""
    return SimpleNamespace(readonly=False, prompt_knob=lambda n: n, action_pause=None,
                           action_submit=None, action_autofeed=None, action_save_config=None)


def _exporter_after(start: dict, *knob_events: dict):
    from engine.exporter import Exporter
    from engine.stream import schema

    x = Exporter()
    x.handle(schema.session_start(0.0, start["config"], {"cpus": 2, "ram_bytes": 2**33}, [],
                                  "2026-01-01T00:00:00Z"))
    for e in knob_events:
        if e:
            x.handle(schema.knob(1.0, e["name"], e["old"], e["new"], "operator"))
    return x


def _gauge(x, name: str) -> float | None:
    s = settings.find(name)
    own = s.knob.gauge if s is not None and s.knob is not None else ""
    if own:
        return x.gauges.values[own].get(())
    return x.gauges.values["sealtop_knob_value"].get((name,))


def test_a_budget_gauge_is_absent_while_unlimited_and_counts_go_to_the_labelled_gauge():
    x = _exporter_after({"config": {"memory_budget": 0, "partition_workers": 3}},
                        {"name": "memory_budget", "old": 0, "new": 4 * GiB},
                        {"name": "partition_workers", "old": 3, "new": 5},
                        {"name": "memory_budget", "old": 4 * GiB, "new": 0})
    assert x.gauges.values["sealtop_memory_budget_bytes"] == {}
    assert x.gauges.values["sealtop_knob_value"][("partition_workers",)] == 5
    assert ("memory_budget",) not in x.gauges.values["sealtop_knob_value"]


def test_the_farm_resizes_its_slots_for_the_count_knobs_only():
    from engine.cluster.hostengine import slot_knobs

    assert slot_knobs() == ("partition_workers", "gpu_channel_capacity")


# ---- one key step, the prompt's reading --------------------------------------------------------


@hsettings(max_examples=200, deadline=None)
@given(name=st.sampled_from(settings.KNOBS), cur=st.one_of(st.none(), st.integers(0, 2**40)),
       direction=st.sampled_from((-1, 1)), mem=st.integers(0, 2**40))
def test_a_key_step_moves_one_step_and_never_below_the_least(name, cur, direction, mem):
    from app.knobs import next_value

    k = settings.knob_of(name)
    new = next_value(name, cur, direction, mem)
    assert new >= k.least
    if settings.find(name).unit == "bytes":  # type: ignore[union-attr]
        assert new % k.step == 0
        if not cur:  # unlimited: a budget just above the use (the down key a step less)
            assert new == max(k.least, (mem // k.step + 2 + min(direction, 0)) * k.step)
        else:
            assert new == max(k.least, (cur // k.step + direction) * k.step)
    else:
        assert new == max(k.least, (cur or k.least) + direction)


@hsettings(max_examples=100, deadline=None)
@given(n=st.integers(0, 2**45), name=st.sampled_from(settings.KNOBS))
def test_the_prompt_reads_what_the_header_shows(n, name):
    from app.knobs import is_size, parse_answer, show

    if is_size(name):
        n = n // GiB * GiB
        assert parse_answer(name, config.format_size(n)) == n
        assert show(name, n) == ("unlimited" if n == 0 else show(name, config.format_size(n)))
    else:
        assert parse_answer(name, str(n)) == n


@pytest.mark.parametrize("name", settings.KNOBS)
@pytest.mark.parametrize("typed", ["", "two", "4.5.6", "12 apples"])
def test_the_prompt_refuses_a_typo_in_one_line(name, typed):
    from app.knobs import parse_answer

    with pytest.raises(ValueError) as info:
        parse_answer(name, typed)
    assert name in str(info.value) and "\n" not in str(info.value)


# ---- a knob added to the table reaches everything derived from it ------------------------------

FAKE = Setting("fake_knob", "engine", 3, settings._count(1, 9), "", "a knob for this test only",
               knob=Knob(apply="_apply_fake", label="Fake", keys=("f", "F"), farm_slots=True))


@pytest.fixture
def fake_knob(monkeypatch):
    monkeypatch.setattr(settings, "SETTINGS", (*settings.SETTINGS, FAKE))
    return FAKE


def test_a_knob_added_to_the_table_is_validated_and_listed(fake_knob):
    from engine.cluster.hostengine import slot_knobs

    assert "fake_knob" in settings.knob_names() and "fake_knob" in slot_knobs()
    assert config.validate("fake_knob", 4) == 4 and config.check_knob("fake_knob", 9) == 9
    for bad in (0, 10, "4", True):
        with pytest.raises(ValueError, match=r"^fake_knob: "):
            config.check_knob("fake_knob", bad)
    with pytest.raises(ConfigError, match=r"^f\.toml:2: engine\.fake_knob: must be between 1"):
        parse_config("[engine]\nfake_knob = 12\n", "f.toml")
    with pytest.raises(ValueError, match="unknown knob"):
        config.check_knob("fake_knob_2", 1)


def test_a_knob_added_to_the_table_is_saved_gauged_bound_and_prompted(fake_knob, tmp_path):
    from app import knobs as console_knobs
    from app.configsave import save_knobs, saved_knobs
    from app.live_source import LiveSource

    path = tmp_path / "sealtop.toml"
    path.write_text("# mine\n[engine]\npartition_workers = 2\n")
    assert save_knobs(path, {"fake_knob": 5, "partition_workers": 2}) == ["fake_knob"]
    text = path.read_text()
    assert text.startswith("# mine\n") and tomllib.loads(text)["engine"] == {
        "partition_workers": 2, "fake_knob": 5}
    assert "fake_knob" in saved_knobs()

    x = _exporter_after({"config": {"fake_knob": 3}}, {"name": "fake_knob", "old": 3, "new": 7})
    assert x.gauges.values["sealtop_knob_value"][("fake_knob",)] == 7

    got = {b.id: (b.key, b.action, b.description) for b in console_knobs.bindings("app.knob")}
    assert got["fake-down"] == ("f", "app.knob('fake_knob', -1)", "Fake −1")
    assert got["fake-up"] == ("F", "app.knob('fake_knob', 1)", "Fake +1")
    assert "f" in console_knobs.knob_keys()
    src = _source()
    assert "Set fake_knob…" in [t for t, _, _ in LiveSource.commands(src)]  # type: ignore[arg-type]
    assert console_knobs.header_text("fake_knob", {"fake_knob": 4}) == "fake 4"
    assert console_knobs.next_value("fake_knob", 1, -1, 0) == 1
    assert console_knobs.parse_answer("fake_knob", "6") == 6


def test_set_knob_dispatches_to_the_knob_s_applier_after_its_event(fake_knob, monkeypatch):
    from engine.pipeline.engine import Engine

    seen: list[tuple[str, object]] = []
    monkeypatch.setattr(Engine, "_apply_fake", lambda self, v: seen.append(("applied", v)),
                        raising=False)
    eng = Engine(EngineConfig(backend="cpu", devices=[]))
    eng.config.fake_knob = 3  # type: ignore[attr-defined]
    q = eng.subscribe()
    eng.set_knob("fake_knob", 8)
    ev = q.get_nowait()
    assert (ev["kind"], ev["name"], ev["old"], ev["new"]) == ("knob", "fake_knob", 3, 8)
    assert seen == [("applied", 8)] and eng.config.fake_knob == 8  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"^fake_knob: must be between 1 and 9"):
        eng.set_knob("fake_knob", 0)
    assert seen == [("applied", 8)] and q.empty()


def test_the_real_appliers_change_the_engine():
    from engine.pipeline.engine import Engine

    eng = Engine(EngineConfig(backend="cpu", devices=[]))
    eng.set_knob("partition_workers", 5)
    eng.set_knob("gpu_channel_capacity", 4)
    eng.set_knob("memory_budget", 3 * GiB)
    assert (eng.config.partition_workers, eng.config.gpu_channel_capacity,
            eng.config.memory_budget) == (5, 4, 3 * GiB)
    assert (eng.admission.limit, eng.admission.budget, eng.channel.capacity) == (5, 3 * GiB, 4)
    with pytest.raises(ValueError, match="memory_budget"):
        eng.set_knob("memory_budget", "lots")
    assert eng.admission.budget == 3 * GiB
