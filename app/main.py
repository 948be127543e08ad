"""The `sealtop` entry point: the console for no verb, `replay FILE` and `compare A B`;
every other verb goes to the headless engine CLI (engine/verbs/cli.py).

Textual is imported only when the console opens, so the headless verbs run where Textual is not
installed. Bad input (a missing config, an unreadable session) gets one line and a non-zero
exit, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.defaults import DEFAULT_CONFIG, refresh_seconds
from engine.verbs.common import CONSOLE_VERBS, OneLineParser

# How each console verb is called, for --help (every verb of CONSOLE_VERBS has a line).
CONSOLE_USAGE = {"replay": "replay FILE", "compare": "compare A B", "attach": "attach", "serve": "serve"}


def epilog() -> str:
    """--help's list of every verb: the console's, then the headless CLI's (engine/verbs/cli.py)."""
    from engine.verbs.cli import headless_verbs

    console = ", ".join(CONSOLE_USAGE[v] for v in CONSOLE_VERBS)
    headless = ", ".join("replay FILE --summary" if v == "replay" else v for v in headless_verbs())
    return (f"console verbs: {console}; headless verbs (see `sealtop VERB --help`): {headless}")


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="sealtop",
        description="Operator console for the sealtop Groth16 sealing engine.",
        epilog=epilog(),
    )
    p.add_argument("--config", metavar="FILE",
                   help=f"engine config (TOML); default: ./{DEFAULT_CONFIG} when there is one "
                        "(where ctrl+s saves the knobs), else built-in defaults")
    p.add_argument("--readonly", action="store_true", help="watch only: disable all tuning keys")
    p.add_argument("--record", metavar="FILE", help="record the live session to FILE")
    p.add_argument("--theme", choices=("sealtop-dark", "sealtop-light", "sealtop-mono"),
                   help="start with this theme (t switches live)")
    p.add_argument("--refresh", type=refresh_seconds, default=1.0, metavar="S",
                   help="refresh interval in seconds, 0.05 to 60 (default 1; r cycles live)")
    p.add_argument("--no-autosubmit", action="store_true",
                   help="do not keep jobs flowing; submit with n")
    p.add_argument("--metrics", type=_metrics_address, metavar="[HOST:]PORT",
                   help="serve Prometheus /metrics there (no host: 127.0.0.1 only)")
    p.add_argument("--no-attach", action="store_true",
                   help="do not offer the socket that `sealtop attach` and `sealtop serve` use")
    p.add_argument("--cluster", metavar="ADDR",
                   help="the console on the farm whose Dask scheduler is at ADDR (default: the "
                        "config's [cluster] scheduler, if any): its hosts, each host's dashboard")
    return p


def _metrics_address(text: str):
    from engine.address import AddressError, parse_address

    try:
        return parse_address(text)
    except AddressError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--metrics: ")) from None


def _replay_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="sealtop replay", description="Replay a recorded session.")
    p.add_argument("file", metavar="FILE",
                   help="a session recorded with --record (.jsonl, or .jsonl.gz as it is)")
    p.add_argument("--summary", action="store_true",
                   help="print the summary tables instead of opening the console (headless)")
    p.add_argument("--speed", type=int, default=1, choices=(1, 2, 4, 8, 16, 32, 64),
                   help="replay speed, times real time (default 1; < and > change it live)")
    p.add_argument("--paused", action="store_true", help="open at the end, paused")
    p.add_argument("--theme", choices=("sealtop-dark", "sealtop-light", "sealtop-mono"),
                   help="start with this theme (t switches live)")
    p.add_argument("--refresh", type=refresh_seconds, default=0.25, metavar="S",
                   help="refresh interval in seconds, 0.05 to 60 (default 0.25)")
    return p


def _compare_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="sealtop compare", description="Two sessions side by side.")
    p.add_argument("a", metavar="FILE_A", help="the first recorded session (A)")
    p.add_argument("b", metavar="FILE_B", help="the second recorded session (B; s swaps them)")
    p.add_argument("--theme", choices=("sealtop-dark", "sealtop-light", "sealtop-mono"),
                   help="start with this theme (t switches live)")
    return p


def is_console(argv: list[str]) -> bool:
    """Whether argv opens the console (True) or goes to the headless CLI (False)."""
    if not argv or argv[0].startswith("-"):
        return True
    if argv[0] == "replay":
        return "--summary" not in argv
    return argv[0] in CONSOLE_VERBS


def _cli(argv: list[str]) -> int:
    try:
        from engine.verbs.cli import main as cli_main
    except ImportError as exc:
        print(f"sealtop: the headless verbs are not available ({exc})", file=sys.stderr)
        return 2
    return int(cli_main(argv) or 0)


def _fail(msg: str, code: int = 2) -> int:
    print(f"sealtop: {msg}", file=sys.stderr)
    return code


def use_tiny_preset(config) -> None:
    """With no --config the console proves the `tiny` preset (small enough for a laptop), where the
    engine knows it; otherwise the engine's own default stays."""
    try:
        from engine.pipeline.circuits import resolve

        resolve("tiny")
    except Exception:  # noqa: BLE001 - an engine without the porep presets
        return
    config.preset = "tiny"


def build_app(argv: list[str]):
    """Parse console argv into a SealtopApp (imports Textual). Raises SystemExit on bad args and
    ValueError (one line) on bad input files."""
    from app.console import SealtopApp
    from app.session_io import SessionError, load_session

    if argv and argv[0] == "attach":
        from app.serve import build_attach_app

        return build_attach_app(argv[1:])
    if argv and argv[0] == "replay":
        a = _replay_parser().parse_args(argv[1:])
        try:
            session = load_session(a.file)
        except SessionError as exc:
            raise ValueError(str(exc)) from None
        app = SealtopApp("replay", session=session, theme=a.theme, refresh=a.refresh,
                         autoplay=not a.paused)
        if app.controller is not None:
            app.controller.speed = a.speed
        return app
    if argv and argv[0] == "compare":
        a = _compare_parser().parse_args(argv[1:])
        try:
            sa, sb = load_session(a.a), load_session(a.b)
        except SessionError as exc:
            raise ValueError(str(exc)) from None
        return SealtopApp("compare", sessions=(sa, sb), theme=a.theme)
    a = _parser().parse_args(argv)
    saved = not a.config and Path(DEFAULT_CONFIG).is_file()
    if saved:
        a.config = DEFAULT_CONFIG  # where ctrl+s saved the knobs without --config
    from app.configsave import names_jobs
    from app.live import EngineUnavailable, find_engine_class, load_config, make_factory
    from engine.watchers import Watch

    try:
        config = load_config(a.config)
    except Exception as exc:  # the engine's ConfigError: one line naming file, line and key
        raise ValueError(str(exc)) from None
    if not a.config or (saved and not names_jobs(a.config)):
        use_tiny_preset(config)  # saved knobs plus the defaults: the jobs a plain `sealtop` ran
    if a.record:  # a bad record target is refused before the engine or the console starts
        from engine.stream.recorder import RecordingError, check_target

        try:
            check_target(a.record)
        except RecordingError as exc:
            raise ValueError(str(exc)) from None
    address = a.cluster or getattr(config, "scheduler", "")
    if address:  # the console on a farm (app/cluster_source.py)
        from app.cluster_source import build_farm_app

        return build_farm_app(address, config, config_path=a.config, readonly=a.readonly,
                              record=a.record, refresh=a.refresh, theme=a.theme,
                              autofeed=not a.no_autosubmit,
                              watch=Watch(metrics=a.metrics, attach=not a.no_attach))
    factory = None
    unavailable = ""
    try:
        find_engine_class()
        factory = make_factory(config)
    except EngineUnavailable as exc:
        unavailable = str(exc)
    return SealtopApp(
        "live", engine_factory=factory, config=config, config_path=a.config,
        readonly=a.readonly, record=a.record, refresh=a.refresh, theme=a.theme,
        autofeed=0 if a.no_autosubmit else 2, unavailable=unavailable,
        watch=Watch(metrics=a.metrics, attach=not a.no_attach), compile_first=factory is not None,
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not is_console(argv):
        return _cli(argv)
    try:
        import textual  # noqa: F401
    except ImportError:
        return _fail("the console needs Textual (pip install textual); "
                     "headless verbs run without it: python -m engine VERB", 1)
    if argv and argv[0] == "serve":
        from app.serve import serve

        return serve(argv[1:])
    try:
        app = build_app(argv)
    except ValueError as exc:  # named by its verb, as the headless verbs' lines are
        return _fail(f"{console_verb(argv)}: {exc}")
    return run_app(app)


def console_verb(argv: list[str]) -> str:
    """The verb a console error line names: replay, compare, attach, serve, or `console` for
    the console on an engine (no verb)."""
    return argv[0] if argv and argv[0] in CONSOLE_VERBS else "console"


def run_app(app) -> int:
    """Run the console with SIGINT, SIGTERM and SIGHUP handled as its quit: the app exits the
    normal way (the terminal restored, the engine stopped, the session completed) with exit
    status 130; a second signal hurries the engine's stop (engine.signals). A terminal that goes
    away (hung up, its reads at end-of-file) is a quit too, signal or not (app.terminal)."""
    from app.terminal import TerminalWatch
    from engine.signals import EXIT_INTERRUPTED, on_again, stop_signals

    engines: list = []
    watch = TerminalWatch(app, EXIT_INTERRUPTED)
    _use_watched_driver(app, watch)

    def quit_app(signum: int) -> None:
        engine = getattr(app, "engine", None)
        if engine is not None and hasattr(engine, "hurry"):
            engines.append(engine)
        watch.check()  # a SIGHUP that comes with the terminal gone: write nothing more to it
        watch.request()  # delivered by the watch once the app's loop runs, if it does not yet

    with stop_signals(raise_first=False, on_signal=quit_app) as handler, watch:
        # later signals only: the first is the normal quit
        def hurry() -> None:
            if handler is not None and len(handler.received) > 1:
                for e in engines:
                    e.hurry()

        on_again(hurry)
        app.run()
    if (handler is not None and handler.received) or watch.gone.is_set():
        return EXIT_INTERRUPTED
    return int(app.return_code or 0)


def _use_watched_driver(app, watch) -> None:
    """Textual's terminal driver, made safe for a terminal that goes away (app.terminal);
    another driver (a test's, the browser's) stays as it is."""
    try:
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:  # not on Linux or macOS
        return
    if getattr(app, "driver_class", None) is LinuxDriver:
        app.driver_class = watch.driver_class(LinuxDriver)

if __name__ == "__main__":
    sys.exit(main())
