"""The local services a sweep runs on: a Ray head and an MLflow tracking server on 127.0.0.1, and Ray's token.

Both servers are started as separate processes (not inside the caller), so they
outlive a ``railsweep demo`` run and are reused by the next one.

Security, in the order a head is started and used:

1. Token (:mod:`~railsweep.services.tokens`): Ray's own authentication token, in Ray's token file
   (``$RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``, mode 0600), made by
   ``ray get-auth-token --generate`` when missing (``$RAY_AUTH_TOKEN``, when set,
   is used as it is). railsweep never prints, logs or passes the token on a
   command line; Ray's processes read it from the file.
2. Head (:mod:`~railsweep.services.ray_head`): ``RAY_AUTH_MODE=token`` on the head and on every client
   these modules run (``ray start``, ``ray job submit``) and in :func:`~railsweep.services.tokens.auth_env`
   for the caller's own. Every Ray port of the local head (GCS, raylet, object
   manager, dashboard, dashboard and runtime-env agents, client server,
   metrics) binds 127.0.0.1: ``ray start --node-ip-address 127.0.0.1`` alone is
   rewritten by Ray to the machine's address, so the head and its local clients
   run in Ray's single-machine mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``,
   the mode Ray uses on macOS and Windows), where the node address is loopback.
3. Reuse: a head already answering on the dashboard port is reused only if it
   refuses a request without the token and accepts ours; otherwise one
   :class:`~railsweep.errors.ConfigError` names the head and says how to stop it (``ray stop``).

Modules (one noun each):

- :mod:`~railsweep.services.process` — ports, HTTP probes, waiting for a service, stopping the ones we started;
- :mod:`~railsweep.services.tokens` — Ray's token file and the token-authenticated, loopback-only environment;
- :mod:`~railsweep.services.ray_init` — the ``ray.init`` arguments an entry point joins or starts Ray with;
- :mod:`~railsweep.services.ray_head` — start or reuse the local Ray head;
- :mod:`~railsweep.services.mlflow_server` — start or reuse the local MLflow server;
- :mod:`~railsweep.services.jobs` — ``ray job submit``.

None of them imports ``ray`` or ``mlflow``: they drive the services' command lines and HTTP endpoints.
"""
