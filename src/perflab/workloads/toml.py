"""perflab.toml: workload entries validated into TomlWorkloads, every error naming the file,
the workload, the key and the line."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.measure.metrics import AGGREGATES, parse_pattern
from perflab.measure.series import SERIES_METRICS, compile_series
from perflab.model import BuildRecipe, MetricPattern

DEFAULT_CONFIG = "perflab.toml"

_ALLOWED_KEYS = {
    "command", "metrics", "primary_metric", "higher_is_better", "env", "cwd", "shell", "build",
    "fork_arg", "event_arg", "checksum_metric", "description", "unit", "series",
}
_BUILD_KEYS = {"sources", "cflags", "ldflags", "language", "output", "compiler"}


@dataclass(frozen=True)
class TomlWorkload:
    """A perflab.toml entry, validated but not yet built."""

    name: str
    path: Path
    command: tuple[str, ...]
    metrics: tuple[MetricPattern, ...]
    primary_metric: str | None
    higher_is_better: bool
    unit: str | None
    env: dict[str, str]
    cwd: str | None
    shell: bool
    build: BuildRecipe | None
    compiler: str
    fork_arg: tuple[str, ...] | None
    event_arg: tuple[str, ...] | None
    checksum_metric: str | None
    description: str
    series: tuple[MetricPattern, ...] = ()


class _Toml:
    """A parsed perflab.toml with line lookup for error messages."""

    def __init__(self, path: Path) -> None:
        import tomllib

        self.path = path
        self.label = path.name if path.name == DEFAULT_CONFIG else str(path)
        try:
            self.text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise PerflabError(
                f"{self.label}: not UTF-8 text (byte {exc.start}): a perflab.toml is a UTF-8 TOML file"
            ) from None
        except OSError as exc:
            raise PerflabError(f"{path}: cannot read it ({exc.strerror}): check the --config path") from None
        try:
            self.data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            msg = str(exc)
            m = re.search(r"\(at line (\d+), column \d+\)", msg)
            line = m.group(1) if m else str(max(1, len(self.text.splitlines())))  # "at end of document"
            what = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", msg) or "invalid TOML"
            raise PerflabError(f"{self.label}: {what[0].lower() + what[1:]}: fix the TOML syntax (line {line})") from None

    def line_of(self, name: str, key: str | None = None, section: str = "") -> int:
        """Line of ``[workload.NAME<section>]`` (or of ``key =`` inside it); 0 when unknown."""
        lines = self.text.splitlines()
        qname = rf"(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')"
        header = re.compile(rf"^\s*\[\s*workload\s*\.\s*{qname}{re.escape(section)}\s*\]")
        start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
        if start is None:
            # inline tables ([workload] name = {...}) or dotted keys: find the name anywhere
            start = next((i for i, ln in enumerate(lines) if re.search(rf"\b{re.escape(name)}\b", ln)), None)
            if start is None:
                return 0
        if key is None:
            return start + 1
        for i in range(start + 1, len(lines)):
            if re.match(r"^\s*\[", lines[i]):
                break
            if re.match(rf"^\s*{re.escape(key)}\s*=", lines[i]):
                return i + 1
        return start + 1

    def error(self, what: str, name: str, key: str | None = None, section: str = "") -> PerflabError:
        return PerflabError(f"{self.label}: {what} (line {self.line_of(name, key, section)})")


def _str_list(t: _Toml, name: str, key: str, value: Any, section: str = "", split: bool = True) -> tuple[str, ...]:
    if isinstance(value, str) and split:
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise t.error(f"workload '{name}': {key} is not a valid command line ({exc})", name, key, section)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise t.error(f"workload '{name}': {key} must be a list of strings", name, key, section)


def _parse_entry(t: _Toml, name: str, raw: Any) -> TomlWorkload:
    if not isinstance(raw, dict):
        raise t.error(f"workload '{name}' must be a table: [workload.{name}]", name)
    unknown = sorted(set(raw) - _ALLOWED_KEYS)
    if unknown:
        raise t.error(
            f"workload '{name}': unknown key '{unknown[0]}' (known: {', '.join(sorted(_ALLOWED_KEYS))})",
            name, unknown[0],
        )
    recipe = None
    compiler = ""
    if "build" in raw:
        b = raw["build"]
        if not isinstance(b, dict):
            raise t.error(f"workload '{name}': build must be a table [workload.{name}.build]", name, "build")
        bad = sorted(set(b) - _BUILD_KEYS)
        if bad:
            raise t.error(
                f"workload '{name}': unknown build key '{bad[0]}' (known: {', '.join(sorted(_BUILD_KEYS))})",
                name, bad[0], ".build",
            )
        if "sources" not in b:
            raise t.error(f"workload '{name}': build needs sources = [\"file.cpp\", ...]", name, None, ".build")
        srcs = _str_list(t, name, "sources", b["sources"], ".build", split=False)
        if not srcs:
            raise t.error(f"workload '{name}': build sources is empty", name, "sources", ".build")
        for s in srcs:
            if not (t.path.parent / s).is_file():
                raise t.error(f"workload '{name}': source file '{s}' not found next to {t.label}", name, "sources", ".build")
        lang = b.get("language", "c" if all(s.endswith(".c") for s in srcs) else "c++")
        if lang not in ("c", "c++"):
            raise t.error(f"workload '{name}': language must be \"c\" or \"c++\", not {lang!r}", name, "language", ".build")
        compiler = b.get("compiler", "gcc" if lang == "c" else "g++")
        if not isinstance(compiler, str):
            raise t.error(f"workload '{name}': compiler must be a string", name, "compiler", ".build")
        output = b.get("output", name)
        if not isinstance(output, str) or "/" in output or not output:
            raise t.error(f"workload '{name}': output must be a file name", name, "output", ".build")
        recipe = BuildRecipe(
            sources=srcs,
            language=lang,
            cflags=_str_list(t, name, "cflags", b.get("cflags", ["-O2"]), ".build"),
            ldflags=_str_list(t, name, "ldflags", b.get("ldflags", []), ".build"),
            output=output,
        )
    if "command" in raw and raw.get("shell") is True and isinstance(raw["command"], str):
        # A shell command is kept as written: splitting and re-joining it would lose its quotes.
        command: tuple[str, ...] = (raw["command"],)
    elif "command" in raw:
        command = _str_list(t, name, "command", raw["command"])
    elif recipe is not None:
        command = ("{binary}",)
    else:
        raise t.error(f"workload '{name}' has no command: add command = [\"prog\", \"arg\", ...]", name)
    if not command:
        raise t.error(f"workload '{name}': command is empty", name, "command")
    if "{binary}" in " ".join(command) and recipe is None:
        raise t.error(f"workload '{name}': command uses {{binary}} but there is no [workload.{name}.build]", name, "command")

    metrics_raw = raw.get("metrics", [])
    if isinstance(metrics_raw, (str, dict)):
        metrics_raw = [metrics_raw]
    if not isinstance(metrics_raw, list) or not all(isinstance(m, (str, dict)) for m in metrics_raw):
        raise t.error(
            f"workload '{name}': metrics must be a list of regex strings or tables "
            "{ regex = '...', aggregate = 'last|first|sum|max|min|count', stream = 'both|stdout|stderr' }",
            name, "metrics")
    groups: list[str] = []
    metrics: list[MetricPattern] = []
    for item in metrics_raw:
        if isinstance(item, dict):
            unknown = sorted(set(item) - {"regex", "aggregate", "stream"})
            if unknown or not isinstance(item.get("regex"), str):
                raise t.error(
                    f"workload '{name}': a metric table needs regex = '...' and may have aggregate "
                    f"and stream{'; unknown key ' + unknown[0] if unknown else ''}", name, "metrics")
            pattern = MetricPattern(regex=item["regex"], stream=str(item.get("stream", "both")),
                                    aggregate=str(item.get("aggregate", "last")))
        else:
            pattern = parse_pattern(item)
        rx = pattern.regex
        if pattern.stream not in ("both", "stdout", "stderr"):
            raise t.error(f"workload '{name}': metric stream {pattern.stream!r} is unknown: use both, "
                          "stdout or stderr", name, "metrics")
        if pattern.aggregate not in AGGREGATES:
            raise t.error(f"workload '{name}': metric aggregate {pattern.aggregate!r} is unknown: use "
                          f"one of {', '.join(AGGREGATES)}", name, "metrics")
        try:
            compiled = re.compile(rx, re.MULTILINE)
        except re.error as exc:
            raise t.error(f"workload '{name}': metric regex {rx!r} does not compile ({exc})", name, "metrics")
        if not compiled.groupindex:
            raise t.error(
                f"workload '{name}': metric regex {rx!r} has no named group: use (?P<name>...)", name, "metrics"
            )
        groups.extend(compiled.groupindex)
        metrics.append(pattern)

    series_raw = raw.get("series", [])
    if isinstance(series_raw, str):
        series_raw = [series_raw]
    if not isinstance(series_raw, list) or not all(isinstance(x, str) for x in series_raw):
        raise t.error(f"workload '{name}': series must be a list of regex strings", name, "series")
    try:
        series = compile_series(series_raw)
    except PerflabError as exc:
        raise t.error(f"workload '{name}': {exc}", name, "series") from None
    if series:
        groups.extend(SERIES_METRICS)
    primary = raw.get("primary_metric")
    if primary is not None and (not isinstance(primary, str) or primary not in groups):
        raise t.error(
            f"workload '{name}': primary_metric {primary!r} is not a named group of its metrics "
            f"({', '.join(groups) or 'none defined'})",
            name, "primary_metric",
        )
    hib = raw.get("higher_is_better", True)
    if not isinstance(hib, bool):
        raise t.error(f"workload '{name}': higher_is_better must be true or false", name, "higher_is_better")
    unit = raw.get("unit")
    if unit is not None and (not isinstance(unit, str) or not unit.strip()):
        raise t.error(f"workload '{name}': unit must be a non-empty string like \"events/s\"", name, "unit")
    if unit is not None and primary is None:
        raise t.error(f"workload '{name}': unit belongs to primary_metric: name primary_metric too", name, "unit")
    shell = raw.get("shell", False)
    if not isinstance(shell, bool):
        raise t.error(f"workload '{name}': shell must be true or false", name, "shell")
    env = raw.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in env.items()):
        raise t.error(f"workload '{name}': env must be a table of NAME = \"value\"", name, "env")
    cwd = raw.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str):
            raise t.error(f"workload '{name}': cwd must be a string path", name, "cwd")
        full = (t.path.parent / cwd).resolve()
        if not full.is_dir():
            raise t.error(f"workload '{name}': cwd '{cwd}' is not a directory", name, "cwd")
        cwd = str(full)
    checksum = raw.get("checksum_metric")
    if checksum is not None and checksum not in groups:
        raise t.error(f"workload '{name}': checksum_metric {checksum!r} is not a named group of its metrics", name, "checksum_metric")

    def template(key: str) -> tuple[str, ...] | None:
        return _str_list(t, name, key, raw[key]) if key in raw else None

    desc = raw.get("description", "")
    return TomlWorkload(
        name=name, path=t.path, command=command, metrics=tuple(metrics), primary_metric=primary,
        higher_is_better=hib, unit=unit, env={k: str(v) for k, v in env.items()}, cwd=cwd, shell=shell,
        build=recipe, compiler=compiler, fork_arg=template("fork_arg"), event_arg=template("event_arg"),
        checksum_metric=checksum, description=desc if isinstance(desc, str) else "", series=series,
    )


def load_config(config_path: str | os.PathLike | None = None) -> dict[str, TomlWorkload]:
    """The workloads of ``config_path`` (or ./perflab.toml when present), validated."""
    if config_path is None:
        path = Path(DEFAULT_CONFIG)
        if not path.is_file():
            return {}
    else:
        path = Path(config_path)
        if not path.is_file():
            raise PerflabError(f"config file {path} not found: check the --config path")
    t = _Toml(path.resolve() if config_path is None else path)
    t.path = path.resolve()
    unknown_top = sorted(set(t.data) - {"workload", "variants"})
    # other sections (e.g. [variants]) belong to studies; we only own [workload.*]
    del unknown_top
    section = t.data.get("workload", {})
    if not isinstance(section, dict):
        raise PerflabError(f"{t.label}: 'workload' must be a table of [workload.NAME] sections (line 1)")
    return {name: _parse_entry(t, name, raw) for name, raw in section.items()}
