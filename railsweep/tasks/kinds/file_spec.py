"""Task files: a task declared as data (YAML), not coded, and checked completely before anything runs.

A task file (format 1, documented in ``docs/tasks.md``, "Task files") names the task's data, its prompt (Jinja,
lm-eval's variables), how an answer is read and how it is graded. :func:`load_task_file` reads one (or a shipped
task, by name) into a frozen :class:`TaskSpec`; every problem is one ConfigError naming the file and the field.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from railsweep.errors import ConfigError
from railsweep.tasks.answers.file_rule_spec import GRADER_TYPES, SELECTS, STEP_KINDS, Extractor, Grader, Step
from railsweep.tasks.data.rows import FORMATS, format_of
from railsweep.tasks.kinds.file_templates import TemplateError, compile_condition, compile_template

BUILTIN_DIR = Path(__file__).parents[1] / "builtin"  # railsweep/tasks/builtin
FORMAT_VERSION = 1
_TOP = ("format", "name", "description", "data", "fields", "doc_to_text", "doc_to_target", "gold_chain",
        "fewshot", "target_delimiter", "fewshot_delimiter", "stop", "grader", "answer_rules")  # fmt: skip
_REQUIRED = ("name", "data", "doc_to_text", "doc_to_target", "grader", "answer_rules")


def builtin_tasks() -> tuple[str, ...]:
    """The names of the task files shipped in the package (``railsweep/tasks/builtin/<name>.yaml``)."""
    return tuple(sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml")))


def resolve_task_ref(ref: str) -> Path:
    """``ref`` as a task file path: a shipped task's name, or an existing ``.yaml``/``.yml`` file."""
    if ref in builtin_tasks():
        return BUILTIN_DIR / f"{ref}.yaml"
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    near = difflib.get_close_matches(ref, builtin_tasks(), n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    raise ConfigError(
        f"task {ref!r}: neither a task file nor a shipped task (shipped: {', '.join(builtin_tasks())}){hint}"
    )


def file_sha256(path: str | Path) -> str:
    """The task file's content hash (what enters a custom task's cell id)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class FewshotSpec:
    """Where the exemplars come from (a file, or the first ``n`` rows of another split) and how they render."""

    path: str | None
    split: str | None
    n: int | None
    doc_to_text: str
    doc_to_target: str


@dataclass(frozen=True)
class DataSpec:
    """The evaluation rows: a local file (``{task_dir}``/``{split}`` filled in) or a hub dataset."""

    path: str | None
    hub: str | None
    config: str | None
    format: str | None
    keep_if: str | None


@dataclass(frozen=True)
class TaskSpec:
    """A validated task file. ``answer_rules`` keeps the file's order; the first rule is the default."""

    source: Path
    sha256: str
    builtin: bool
    name: str
    description: str
    data: DataSpec
    index_field: str | None
    question_field: str
    solution_field: str | None
    doc_to_text: str
    doc_to_target: str
    gold_chain: str | None
    fewshot: FewshotSpec | None
    target_delimiter: str
    fewshot_delimiter: str
    stop: tuple[str, ...]
    grader: Grader
    answer_rules: tuple[tuple[str, Extractor], ...]

    @property
    def answer_type(self) -> str:
        """What a gold answer is: the grader's type (``numeric``, ``math`` or ``string``)."""
        return self.grader.type

    @property
    def rule_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.answer_rules)

    def rule(self, name: str) -> Extractor:
        if name in self.rule_names:
            return dict(self.answer_rules)[name]
        raise ConfigError(
            f"task {self.name!r} ({self.source}) has no answer rule {name!r}; its rules: {', '.join(self.rule_names)}"
        )

    def uses_task_dir(self) -> bool:
        paths = [self.data.path, self.fewshot.path if self.fewshot else None]
        return any(p is not None and "{task_dir}" in p for p in paths)


def fill_path(spec: TaskSpec, template: str, task_dir: str | Path | None, split: str) -> Path:
    """A data or few-shot path with ``{task_dir}`` and ``{split}`` filled in; relative to the task file."""
    if "{task_dir}" in template and task_dir is None:
        raise ConfigError(f"task {spec.name!r} ({spec.source}) reads its data from {{task_dir}}: give --task-dir")
    path = Path(template.replace("{task_dir}", str(task_dir)).replace("{split}", split)).expanduser()
    return path if path.is_absolute() else spec.source.parent / path


def data_files(spec: TaskSpec, task_dir: str | Path | None, split: str,
               fewshot: str | Path | None = None) -> list[Path]:  # fmt: skip
    """The local files a task reads (task file, data, exemplars), for provenance checksums; nothing is read."""
    files = [spec.source]
    if spec.data.path is not None:
        files.append(fill_path(spec, spec.data.path, task_dir, split))
    if fewshot is not None:
        files.append(Path(fewshot))
    elif spec.fewshot is not None and spec.fewshot.path is not None:
        files.append(fill_path(spec, spec.fewshot.path, task_dir, split))
    return files


class _Reader:
    """Checks one task file's fields; every error names the file and the dotted field."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, field: str, problem: str) -> ConfigError:
        return ConfigError(f"task file {self.path}: {field}: {problem}")

    def mapping(self, value: Any, field: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(field, f"expected a mapping, got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                near = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else f"; allowed: {', '.join(allowed)}"
                raise self.fail(f"{field}.{key}".lstrip("."), f"unknown field{hint}")
        for key in required:
            if key not in value:
                raise self.fail(f"{field}.{key}".lstrip("."), "required field is missing")
        return value

    def text(self, value: Any, field: str, *, empty: bool = False) -> str:
        if not isinstance(value, str) or (not empty and not value):
            raise self.fail(field, f"expected a {'' if empty else 'non-empty '}string, got {value!r}")
        return value

    def optional_text(self, d: dict, key: str, field: str) -> str | None:
        return None if d.get(key) is None else self.text(d[key], field)

    def template(self, value: Any, field: str, what: str = "template") -> str:
        """``value`` if it compiles as a Jinja ``template`` or ``expression``."""
        source = self.text(value, field)
        try:
            (compile_template if what == "template" else compile_condition)(source)
        except TemplateError as e:
            raise self.fail(field, f"not a valid Jinja {what} ({e})") from None
        return source

    def regex(self, value: Any, field: str, ignore_case: bool = False) -> re.Pattern[str]:
        source = self.text(value, field)
        try:
            return re.compile(source, re.IGNORECASE if ignore_case else 0)
        except re.error as e:
            raise self.fail(field, f"not a valid regular expression ({e})") from None

    def strings(self, value: Any, field: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(s, str) and s for s in value):
            raise self.fail(field, f"expected a list of non-empty strings, got {value!r}")
        return tuple(value)

    def flag(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(field, f"expected true or false, got {value!r}")
        return value

    def choice(self, value: Any, field: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(field, f"must be one of {', '.join(choices)}, got {value!r}")
        return value


def _data(r: _Reader, raw: Any) -> DataSpec:
    d = r.mapping(raw, "data", ("path", "hub", "config", "format", "keep_if"))
    if ("path" in d) == ("hub" in d):
        raise r.fail("data", "give exactly one of 'path' (a local file) or 'hub' (a hub dataset id)")
    path = r.optional_text(d, "path", "data.path")
    fmt = r.choice(d["format"], "data.format", FORMATS) if d.get("format") is not None else None
    if path is not None and format_of(path, fmt) is None:
        raise r.fail("data.format", f"cannot tell the format from {path!r}; give one of {', '.join(FORMATS)}")
    keep_if = r.template(d["keep_if"], "data.keep_if", "expression") if d.get("keep_if") is not None else None
    return DataSpec(path, r.optional_text(d, "hub", "data.hub"), r.optional_text(d, "config", "data.config"), fmt, keep_if)


def _fewshot(r: _Reader, raw: Any, doc_to_text: str, doc_to_target: str) -> FewshotSpec | None:
    if raw is None:
        return None
    d = r.mapping(raw, "fewshot", ("path", "split", "n", "doc_to_text", "doc_to_target"))
    if ("path" in d) == ("split" in d):
        raise r.fail("fewshot", "give exactly one of 'path' (an exemplar file) or 'split' (rows of another split)")
    n = d.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise r.fail("fewshot.n", f"expected a positive integer, got {n!r}")
    if n is None and "split" in d:
        raise r.fail("fewshot.n", "required with 'split' (how many of its first rows are exemplars)")
    if "path" in d and format_of(d["path"]) is None:
        raise r.fail("fewshot.path", f"{d['path']!r}: expected a .json, .jsonl, .csv or .parquet file")
    return FewshotSpec(
        path=r.optional_text(d, "path", "fewshot.path"), split=r.optional_text(d, "split", "fewshot.split"), n=n,
        doc_to_text=r.template(d.get("doc_to_text", doc_to_text), "fewshot.doc_to_text"),
        doc_to_target=r.template(d.get("doc_to_target", doc_to_target), "fewshot.doc_to_target"),
    )


def _grader(r: _Reader, raw: Any, field: str) -> Grader:
    d = r.mapping(raw, field, ("type", "tolerance", "thousands_separator", "ignore_case", "regexes_to_ignore"), ("type",))
    kind = r.choice(d["type"], f"{field}.type", GRADER_TYPES)
    allowed = {"numeric": ("tolerance", "thousands_separator"), "string": ("ignore_case", "regexes_to_ignore")}
    for key in d:
        if key != "type" and key not in allowed.get(kind, ()):
            raise r.fail(f"{field}.{key}", f"does not apply to a {kind} grader")
    tol = d.get("tolerance", 0)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < float("inf"):
        raise r.fail(f"{field}.tolerance", f"expected a finite number >= 0, got {tol!r}")
    sep = r.text(d.get("thousands_separator", ","), f"{field}.thousands_separator", empty=True)
    if sep and (sep.isdigit() or sep in ".-"):
        raise r.fail(f"{field}.thousands_separator", f"cannot be a digit, '.' or '-', got {sep!r}")
    ignore = tuple(
        r.regex(p, f"{field}.regexes_to_ignore[{i}]") for i, p in enumerate(d.get("regexes_to_ignore", []) or [])
    )
    if "regexes_to_ignore" in d and not isinstance(d["regexes_to_ignore"], list):
        raise r.fail(f"{field}.regexes_to_ignore", "expected a list of regular expressions")
    case = r.flag(d.get("ignore_case", False), f"{field}.ignore_case")
    return Grader(kind, float(tol), sep, case, ignore)


def _step(r: _Reader, raw: Any, field: str) -> Step:
    d = r.mapping(raw, field, (*STEP_KINDS, "select", "ignore_case"))
    kinds = [k for k in STEP_KINDS if k in d]
    if len(kinds) != 1:
        raise r.fail(field, f"give exactly one of {', '.join(STEP_KINDS)}")
    kind = kinds[0]
    if kind == "regex":
        case = r.flag(d.get("ignore_case", False), f"{field}.ignore_case")
        pattern = r.regex(d["regex"], f"{field}.regex", case)
        return Step("regex", r.choice(d.get("select", "last"), f"{field}.select", SELECTS), pattern)
    for key in ("select", "ignore_case"):
        if key in d:
            raise r.fail(f"{field}.{key}", f"does not apply to a {kind} step (write {kind}: first|last)")
    return Step(kind, r.choice(d[kind], f"{field}.{kind}", SELECTS), None)


def _rules(r: _Reader, raw: Any, grader: Grader) -> tuple[tuple[str, Extractor], ...]:
    if not isinstance(raw, dict) or not raw:
        raise r.fail("answer_rules", "expected a non-empty mapping of rule name -> {extract, cut, grader}")
    rules = []
    for name, body in raw.items():
        field = f"answer_rules.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise r.fail(field, "a rule name is lower-case letters, digits and '_', starting with a letter")
        d = r.mapping(body, field, ("extract", "cut", "grader"), ("extract",))
        if not isinstance(d["extract"], list) or not d["extract"]:
            raise r.fail(f"{field}.extract", "expected a non-empty list of steps")
        steps = tuple(_step(r, s, f"{field}.extract[{i}]") for i, s in enumerate(d["extract"]))
        cut = r.strings(d["cut"], f"{field}.cut") if "cut" in d else ()
        own = _grader(r, d["grader"], f"{field}.grader") if "grader" in d else grader
        rules.append((name, Extractor(steps, cut, own)))
    return tuple(rules)


def _fields(r: _Reader, raw: Any) -> tuple[str | None, str, str | None]:
    d = r.mapping(raw or {}, "fields", ("index", "question", "solution"))
    return (r.optional_text(d, "index", "fields.index"), r.text(d.get("question", "question"), "fields.question"),
            r.optional_text(d, "solution", "fields.solution"))  # fmt: skip


def load_task_file(ref: str | Path) -> TaskSpec:
    """Read and check a task file (a path, or a shipped task's name); no data is read yet. Steps: 1. resolve it;
    2. parse the YAML; 3. check every field (names, types, templates, regexes, graders, rules); 4. freeze it."""
    path = resolve_task_ref(str(ref))
    r = _Reader(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f"task file {path}: not valid YAML ({e})".replace("\n", " ")) from None
    d = r.mapping(raw, "", _TOP, _REQUIRED)
    if d.get("format", FORMAT_VERSION) != FORMAT_VERSION:
        raise r.fail("format", f"this railsweep reads task file format {FORMAT_VERSION}, got {d['format']!r}")
    doc_to_text = r.template(d["doc_to_text"], "doc_to_text")
    doc_to_target = r.template(d["doc_to_target"], "doc_to_target")
    grader = _grader(r, d["grader"], "grader")
    index, question, solution = _fields(r, d.get("fields"))
    return TaskSpec(
        source=path, sha256=file_sha256(path), builtin=path.parent == BUILTIN_DIR, name=r.text(d["name"], "name"),
        description=r.text(d.get("description", ""), "description", empty=True),
        data=_data(r, d["data"]), index_field=index, question_field=question, solution_field=solution,
        doc_to_text=doc_to_text, doc_to_target=doc_to_target,
        gold_chain=r.template(d["gold_chain"], "gold_chain") if d.get("gold_chain") is not None else None,
        fewshot=_fewshot(r, d.get("fewshot"), doc_to_text, doc_to_target),
        target_delimiter=r.text(d.get("target_delimiter", " "), "target_delimiter", empty=True),
        fewshot_delimiter=r.text(d.get("fewshot_delimiter", "\n\n"), "fewshot_delimiter", empty=True),
        stop=r.strings(d.get("stop", []), "stop"), grader=grader, answer_rules=_rules(r, d["answer_rules"], grader),
    )  # fmt: skip
