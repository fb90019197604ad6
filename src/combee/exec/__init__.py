"""Where the map step runs besides this process: :class:`RayExecutor` (a Ray cluster)."""

from combee.exec.ray_executor import RayExecutor

__all__ = ["RayExecutor"]
