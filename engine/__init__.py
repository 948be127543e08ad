"""sealtop engine: jobs, circuits, Groth16, the pipeline, telemetry, sessions and CLI verbs. Never imports textual."""
