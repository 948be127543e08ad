"""The headless verbs: ``sealtop VERB`` and ``python -m engine VERB``, and the benchmarks behind
``bench``.

Everything here parses arguments, drives the engine and prints what it did: cli (the parser and
dispatch), common (the one-line parser, CliError, exit codes), proofs, run, bench and seal (the
verbs by what they do), progress (their step lines), runner (the one way a headless run is
driven), farm_run (that run on the farm), bench_prove and bench_pipeline (the benchmarks).

The engine's own services stay one floor down, because the console uses them as much as the
verbs: engine/watchers.py starts the exporter and the attach socket for a console and a headless
run alike, and engine/attach.py is both a sink of the engine's stream (AttachServer) and the
console's proxy to it (RemoteEngine). Neither parses a command line or prints a verb's output.
Nothing below this package imports it.
"""
