"""GSM8K, its 8-shot CoT exemplars and the PQ paraphrases, fetched from their sources and checked byte for byte.

``railsweep data gsm8k`` writes the layout every command reads, each source at a pinned commit (:data:`FILES`:
openai/grade-school-math, MIT; lm-evaluation-harness' gsm8k-cot exemplars, MIT; lm-sys/llm-decontaminator's
rephrasings, Apache-2.0) and the derived ``pq_test.jsonl``. Every sha256 is pinned (:data:`FILES`,
:data:`DERIVED`): nothing is written until every file checks out; files present with the pinned digest are
kept. ``mirror`` replaces ``https://raw.githubusercontent.com`` (a proxy, or ``file://`` for an offline copy).
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from railsweep.atomic import write_all_atomic
from railsweep.errors import DataError

GITHUB_RAW = "https://raw.githubusercontent.com"
_GSM8K = "openai/grade-school-math/3101c7d5072418e28b9008a6636bde82a006892c"
_LM_EVAL = "EleutherAI/lm-evaluation-harness/v0.4.13"
_REPHRASE = "lm-sys/llm-decontaminator/931834aa0990d9558a06c5d34daf4ad3852a72ae"
PQ_DIR = "gsm8k_paraphrase/lmsys_rephrase"


@dataclass(frozen=True)
class Source:
    """A file downloaded from ``<mirror>/<path>``; ``sha256`` None: checked through what is derived from it."""

    path: str
    sha256: str | None


FILES: Mapping[str, Source] = {
    "gsm8k/test.jsonl": Source(
        f"{_GSM8K}/grade_school_math/data/test.jsonl",
        "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
    ),
    "gsm8k/train.jsonl": Source(
        f"{_GSM8K}/grade_school_math/data/train.jsonl",
        "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465",
    ),
    "gsm8k/LICENSE": Source(f"{_GSM8K}/LICENSE", "86bbb73e855821d7c401912fd4bf82e34313e6e3b6fd6f909f2b6cc9e209a53b"),
    "gsm8k/LICENSE.lm-evaluation-harness": Source(
        f"{_LM_EVAL}/LICENSE.md", "a806e42547620dffbc2ec0333322c8b3523b4af11e059be14ef81aa5b1ae021f"
    ),
    f"{PQ_DIR}/rephrase_gsm8k.jsonl": Source(
        f"{_REPHRASE}/data/rephrase/rephrase_gsm8k.jsonl",
        "5d1d8de893fa6e6f2f45aac7a7562c7546a653d44f3fe2dbff6a24a002e75781",
    ),
    f"{PQ_DIR}/LICENSE": Source(
        f"{_REPHRASE}/LICENSE", "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"
    ),
}
EXEMPLARS_YAML = Source(f"{_LM_EVAL}/lm_eval/tasks/gsm8k/gsm8k-cot.yaml", None)
DERIVED: Mapping[str, str] = {
    "gsm8k/cot_8shot.json": "4d64483f2d85282fe8893ef53776986c348b2f0bb60b46b5ed62065a10590b11",
    f"{PQ_DIR}/pq_test.jsonl": "c4820add67c3ebfde11e9c78b4270289d19c87ca2a4f1458f4de25f56200e4b9",
}
_REPHRASED = re.compile(r"Question: (.*)\nAnswer: \n#### (.*)", re.S)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def download(mirror: str, source: Source, timeout: float = 60.0) -> bytes:
    url = f"{mirror.rstrip('/')}/{source.path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise DataError(f"could not download {url} ({type(e).__name__}: {e})") from e


def exemplars_json(task_yaml: bytes) -> bytes:
    """cot_8shot.json from lm-evaluation-harness' gsm8k-cot.yaml: its fewshot samples as question/answer pairs."""
    try:
        samples = yaml.safe_load(task_yaml)["fewshot_config"]["samples"]
        pairs = [{"question": s["question"], "answer": s["target"]} for s in samples]
    except (yaml.YAMLError, KeyError, TypeError) as e:
        raise DataError(f"gsm8k-cot.yaml has no fewshot_config.samples of question/target ({e})") from e
    return (json.dumps(pairs, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def pq_jsonl(rephrased: bytes, test: bytes) -> bytes:
    """pq_test.jsonl: line i is the paraphrase of GSM8K test item i, its gold answer, and whether it is empty."""
    golds = [json.loads(line)["answer"].split("####")[-1].strip() for line in test.decode("utf-8").splitlines()]
    rows = []
    for i, line in enumerate(rephrased.decode("utf-8").splitlines()):
        match = _REPHRASED.fullmatch(json.loads(line)["text"])
        if match is None or i >= len(golds):
            raise DataError(f"rephrase_gsm8k.jsonl line {i + 1} is not 'Question: ...\\nAnswer: \\n#### N'")
        q = match.group(1).strip()
        rows.append(json.dumps({"idx": i, "question": q, "answer": golds[i], "empty": q == ""}, ensure_ascii=False))
    return ("\n".join(rows) + "\n").encode("utf-8")


def _checked(name: str, data: bytes, want: str) -> bytes:
    got = sha256(data)
    if got != want:
        raise DataError(f"{name}: sha256 {got[:16]}… is not the pinned {want[:16]}…; nothing was written")
    return data


def fetch_gsm8k(out: str | Path, mirror: str = GITHUB_RAW, log: Callable[[str], None] = print) -> dict[str, str]:
    """Download, derive and check every file, then write them under ``out``; returns {file: "kept" | "written"}."""
    out = Path(out)
    present = {name for name, want in {**{k: s.sha256 for k, s in FILES.items()}, **DERIVED}.items()
               if (out / name).is_file() and sha256((out / name).read_bytes()) == want}  # fmt: skip
    data: dict[str, bytes] = {name: (out / name).read_bytes() for name in present}
    for name, source in FILES.items():
        if name not in data:
            log(f"[data] {name} <- {mirror.rstrip('/')}/{source.path}")
            data[name] = _checked(name, download(mirror, source), source.sha256)
    if "gsm8k/cot_8shot.json" not in data:
        log(f"[data] gsm8k/cot_8shot.json <- {mirror.rstrip('/')}/{EXEMPLARS_YAML.path}")
        data["gsm8k/cot_8shot.json"] = exemplars_json(download(mirror, EXEMPLARS_YAML))
    pq = f"{PQ_DIR}/pq_test.jsonl"
    if pq not in data:
        data[pq] = pq_jsonl(data[f"{PQ_DIR}/rephrase_gsm8k.jsonl"], data["gsm8k/test.jsonl"])
    for name, want in DERIVED.items():
        _checked(name, data[name], want)
    write_all_atomic({out / name: lambda path, blob=blob: path.write_bytes(blob)
                      for name, blob in data.items() if name not in present})  # fmt: skip
    return {name: "kept" if name in present else "written" for name in data}
