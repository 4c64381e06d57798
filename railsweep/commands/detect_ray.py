"""``railsweep detect --ray``: the ngram detector's corpus scan as a Ray Data job.

:func:`ray_session` joins the cluster at ``--ray-address`` (token authentication on), or starts a
private local Ray instance (``address="local"``, token authentication, every port on 127.0.0.1:
:func:`railsweep.sweep.local.ray_init_kwargs`) and shuts it down afterwards. :func:`use_ray`
switches the ngram detectors to :func:`railsweep.sweep.ngram_scan.ray_scan`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Ray for the duration of the block: the running session if any, else join ``address`` or start a local one."""
    from railsweep.sweep.local import ray_init_kwargs

    kwargs = ray_init_kwargs(address)  # before importing ray: it sets the token-auth environment
    import ray

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
    from railsweep.sweep.ngram_scan import ray_scan

    for d in detectors:
        if d.name == "ngram":
            d.scanner = ray_scan
