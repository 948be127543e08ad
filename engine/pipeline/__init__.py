"""The proving pipeline: the Engine (orchestrator threads), its worker processes, the scheduler
(permits, budget, pause), the bounded GPU channel and the shared-memory segments.

    from engine.pipeline import Engine, Job
"""

from engine.pipeline.engine import Engine, EngineError, Job

__all__ = ["Engine", "EngineError", "Job"]
