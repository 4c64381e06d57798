"""Ray's authentication token (its own token file, mode 0600; never printed, logged or on a command line) and
the environment every local Ray process runs with."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.services.process import exe

# Ray's single-machine mode: the node address (and so every server of the head) is 127.0.0.1.
LOOPBACK_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def ray_token_path() -> Path:
    """Where Ray looks for its token file: ``$RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token").expanduser()


def ensure_ray_token() -> None:
    """Make sure Ray's token exists, readable by this user only (unless ``$RAY_AUTH_TOKEN`` is set). The
    default file is made by ``ray get-auth-token --generate`` under umask 077; one named by
    ``$RAY_AUTH_TOKEN_PATH``, which Ray does not write, gets one of the same form (256 random bits, hex)."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return
    path = ray_token_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if "RAY_AUTH_TOKEN_PATH" in os.environ:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
        else:
            subprocess.run([exe("ray"), "get-auth-token", "--generate"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False, umask=0o077, env=auth_env())  # fmt: skip
        if not path.exists():
            raise ConfigError(f"could not create Ray's authentication token file {path}")
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)


def auth_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a Ray process on this machine: token authentication on (a caller's ``disabled``
    overridden: without it, anyone who reaches the Jobs API or the GCS runs code), loopback-only node."""
    env = dict(os.environ if base is None else base)
    env["RAY_AUTH_MODE"] = "token"
    env.update(LOOPBACK_ONLY)
    return env


def bearer() -> dict[str, str]:
    """The Authorization header Ray's dashboard expects (built in memory, never printed)."""
    if not (token := os.environ.get("RAY_AUTH_TOKEN")):
        path = ray_token_path()
        token = path.read_text().strip() if path.exists() else ""
    return {"Authorization": f"Bearer {token}"} if token else {}
