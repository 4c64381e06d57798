"""``railsweep detect --ray``: the ngram detector's corpus scan as a Ray Data job. Part of an entry point, so it
may start Ray (the library never does): it joins ``--ray-address`` or starts a private local instance.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from railsweep.detection.ngram_ray import ray_scan
from railsweep.services.ray_init import ray_init_kwargs


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Ray for the duration of the block: the running session if any, else join ``address`` or start a local one."""
    kwargs = ray_init_kwargs(address)  # before importing ray: it sets the token-auth environment
    import ray  # optional heavy dependency, imported after the token-auth environment is set

    if ray.is_initialized():
        yield
        return
    ray.init(**kwargs, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


def use_ray(detectors: Sequence) -> None:
    """Make every ngram detector scan its corpus with Ray Data (same scores as the local scan)."""
    for d in detectors:
        if d.name == "ngram":
            d.scanner = ray_scan
