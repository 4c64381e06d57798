"""The arguments an entry point passes to ``ray.init`` itself (the library never starts Ray): join a cluster,
or start a private local instance."""

from __future__ import annotations

import os
import sys

from railsweep.services.tokens import LOOPBACK_ONLY, auth_env, ensure_ray_token


def ray_init_kwargs(address: str | None, *, num_cpus: int | None = None,
                    num_gpus: int | None = None) -> dict[str, object]:  # fmt: skip
    """Keyword arguments for ``ray.init``; call it before ``import ray`` (it sets the environment Ray reads).

    1. A cluster to join (``address``, else ``$RAY_ADDRESS``, set inside a job): joined with token
       authentication; ``num_cpus``/``num_gpus``, which Ray refuses when joining, are dropped with a note.
    2. Otherwise a fresh private instance (``address="local"``: never a head another process left running),
       token authentication on, every port on 127.0.0.1.
    """
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        if address.split("://")[-1].rsplit(":", 1)[0] in ("127.0.0.1", "localhost"):
            os.environ.update(LOOPBACK_ONLY)  # else Ray rewrites 127.0.0.1 to this machine's address
        dropped = [flag for flag, v in (("--num-cpus", num_cpus), ("--num-gpus", num_gpus)) if v is not None]
        if dropped:
            print(f"[railsweep] joining the Ray cluster at {address}: {' and '.join(dropped)} ignored "
                  "(they size a new local instance; a running cluster has its own resources)",
                  file=sys.stderr, flush=True)  # fmt: skip
        return {"address": address}
    os.environ.update(auth_env({}))
    ensure_ray_token()
    sizes = {"num_cpus": num_cpus, "num_gpus": num_gpus}
    return {"address": "local", **{k: v for k, v in sizes.items() if v is not None}}
