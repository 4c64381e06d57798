"""The local services a sweep runs on: a Ray head and an MLflow tracking server on 127.0.0.1, and Ray's token.

Both are separate processes, so they outlive a ``railsweep demo`` run and are reused by the next. Security,
in the order a head is started and used:

1. Token (:mod:`~railsweep.services.tokens`): Ray's own token file, made when missing, never printed.
2. Head (:mod:`~railsweep.services.ray_head`): ``RAY_AUTH_MODE=token`` on the head and every client; every Ray
   port binds 127.0.0.1, in Ray's single-machine mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``): Ray rewrites
   ``--node-ip-address 127.0.0.1`` alone to the machine's address.
3. Reuse: a running head is reused only if it refuses a request without the token and accepts ours.

None of these modules imports ``ray`` or ``mlflow``: they drive the services' command lines and endpoints.
"""
