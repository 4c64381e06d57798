"""The local services a sweep runs on: a Ray head and an MLflow tracking server on 127.0.0.1, and Ray's token.

Both servers are separate processes, so they outlive a ``railsweep demo`` run and are reused by the next one.

Security, in the order a head is started and used:

1. Token (:mod:`~railsweep.services.tokens`): Ray's own token file, made when missing; railsweep never prints,
   logs or passes the token on a command line.
2. Head (:mod:`~railsweep.services.ray_head`): ``RAY_AUTH_MODE=token`` on the head and on every client these
   modules run. Every Ray port of the local head binds 127.0.0.1: ``ray start --node-ip-address 127.0.0.1``
   alone is rewritten by Ray to the machine's address, so the head and its local clients run in Ray's
   single-machine mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``), where the node address is loopback.
3. Reuse: a head already answering on the dashboard port is reused only if it refuses a request without the
   token and accepts ours; otherwise one :class:`~railsweep.errors.ConfigError` says how to stop it.

The other modules: :mod:`~railsweep.services.process` (ports, HTTP probes, stopping what we started),
:mod:`~railsweep.services.ray_init` (``ray.init``'s arguments), :mod:`~railsweep.services.mlflow_server`,
:mod:`~railsweep.services.jobs` (``ray job submit``). None imports ``ray`` or ``mlflow``: they drive the
services' command lines and HTTP endpoints.
"""
