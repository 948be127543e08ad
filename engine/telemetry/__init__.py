"""Telemetry: RssAnon per process, shared-memory accounting, NVML readings (None = N/A),
counters, the session clock and per-partition timers, and the periodic sampler."""
