"""The verbs that run the engine or the farm: ``run`` (headless, engine/verbs/runner.py), ``replay
--summary`` and ``cluster scheduler|worker`` (engine/cluster), with the --cluster, --metrics
and --no-attach arguments that ``bench pipeline`` shares."""

from __future__ import annotations

import argparse

from engine.verbs.common import CliError, add_sub_verbs, check_record


def add_run(sub) -> None:
    p = sub.add_parser("run", help="run the embedded engine headless on a config",
                       description="Starts the engine on a TOML config, submits N jobs, waits for them, and "
                       "prints the per-proof breakdown, the summary and the final counters (all computed "
                       "from the event stream).")
    p.add_argument("--config", required=True, metavar="FILE", help="engine config (see sample-configs/)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="jobs to submit (default 1)")
    p.add_argument("--record", default=None, metavar="FILE", help="record the session (.jsonl, or .jsonl.gz)")
    add_cluster_arg(p)
    add_watch_args(p)
    p.add_argument("--metrics-linger", type=_seconds, default=None, metavar="S",
                   help="with --metrics: once the run ends, keep serving /metrics until the next "
                        "scrape has read the final counters, at most S seconds (default 30; 0 "
                        "stops with the run)")
    p.set_defaults(func=_cmd_run)


def _seconds(text: str) -> float:
    import math

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if math.isnan(v) or not 0 <= v <= 3600:
        raise argparse.ArgumentTypeError(f"must be 0 to 3600 seconds, got {text}")
    return v


def add_watch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics", default=None, metavar="[HOST:]PORT",
                   help="serve Prometheus /metrics there for the run (no host: 127.0.0.1 only)")
    p.add_argument("--no-attach", action="store_true",
                   help="do not offer the socket that `sealtop attach` and `sealtop serve` use")


def watch(args: argparse.Namespace):
    from engine.address import AddressError, parse_address
    from engine.watchers import Watch

    try:
        metrics = parse_address(args.metrics) if args.metrics is not None else None
    except AddressError as exc:
        raise CliError(str(exc)) from None
    linger = 0.0  # run's option; bench's variants stop at once
    if metrics is not None and hasattr(args, "metrics_linger"):
        from engine.exporter import DEFAULT_LINGER_S

        linger = DEFAULT_LINGER_S if args.metrics_linger is None else args.metrics_linger
    return Watch(metrics=metrics, attach=not args.no_attach, metrics_linger=linger)


def _cmd_run(args: argparse.Namespace) -> int:
    from engine.verbs.runner import run_headless

    if args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {args.jobs}")
    check_record(args.record)
    if args.cluster is not None:
        from engine.verbs.farm_run import run_cluster

        return run_cluster(args.config, cluster_address(args.cluster), args.jobs, args.record)
    return run_headless(args.config, args.jobs, args.record, watch(args))


def add_cluster_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", default=None, metavar="ADDR",
                   help="run the jobs on the farm whose Dask scheduler is at ADDR (tcp://HOST:PORT; "
                   "needs sealtop[cluster])")


def cluster_address(text: str) -> str:
    from engine.config import validate

    try:
        return validate("scheduler", text)
    except ValueError as exc:
        raise CliError(f"--cluster: {str(exc).removeprefix('scheduler: ')}") from None


def add_replay(sub) -> None:
    p = sub.add_parser("replay", help="summarize a recorded session (--summary); the console replays it",
                       description="With --summary, prints the per-proof table and final counters computed "
                       "from the recorded events. Without it, `sealtop replay FILE` opens the console.")
    p.add_argument("file", metavar="FILE", help="session file")
    p.add_argument("--summary", action="store_true", help="print the summary instead of opening the console")
    p.set_defaults(func=_cmd_replay)


def _cmd_replay(args: argparse.Namespace) -> int:
    from engine.verbs.runner import replay_summary

    if not args.summary:
        raise CliError("headless replay needs --summary (the console replays: `sealtop replay FILE`)")
    return replay_summary(args.file)



def add_cluster(sub) -> None:
    p = sub.add_parser("cluster", help="the proving farm: start a Dask scheduler or a farm worker",
                       description="A farm is Dask's scheduler and one worker per host, each holding one "
                       "sealtop engine (needs sealtop[cluster]). Jobs go there with run/bench --cluster ADDR.")
    csub = add_sub_verbs(p, "cluster_verb")
    s = csub.add_parser("scheduler", help="run the farm's Dask scheduler")
    s.add_argument("--host", default="0.0.0.0", help="interface to listen on (default all)")
    s.add_argument("--port", type=int, default=8786, metavar="N", help="port (default 8786)")
    s.set_defaults(func=_cmd_cluster_scheduler)
    w = csub.add_parser("worker", help="run one farm host: a Dask worker holding one engine")
    w.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="the scheduler (default: [cluster] scheduler of the config)")
    w.add_argument("--config", default=None, metavar="FILE", help="this host's engine config")
    w.add_argument("--name", default=None, help="the host's name in the farm (default: the hostname)")
    w.set_defaults(func=_cmd_cluster_worker)


def _cmd_cluster_scheduler(args: argparse.Namespace) -> int:
    from engine.cluster import ClusterError
    from engine.cluster.serve import run_scheduler

    if not 1 <= args.port <= 65535:
        raise CliError(f"--port must be in 1..65535, got {args.port}")
    try:
        return run_scheduler(args.host, args.port)
    except ClusterError as exc:
        raise CliError(str(exc)) from None


def _cmd_cluster_worker(args: argparse.Namespace) -> int:
    from engine.cluster import ClusterError
    from engine.cluster.serve import run_worker
    from engine.config import ConfigError, EngineConfig, load_config

    try:
        cfg = load_config(args.config) if args.config else EngineConfig()
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    address = cluster_address(args.scheduler) if args.scheduler else cfg.scheduler
    if not address:
        raise CliError("no scheduler: give --scheduler ADDR or [cluster] scheduler in the config")
    try:
        return run_worker(address, cfg, args.name)
    except ClusterError as exc:
        raise CliError(str(exc)) from None
