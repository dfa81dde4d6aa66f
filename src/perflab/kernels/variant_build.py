"""Building one variant: plain source lists through the build cache, PGO in two phases, templates.

Plain variants of a source list go through the shared build cache (``perflab.kernels.build``).
PGO variants are built twice at one fixed path, because gcc names a ``.gcda`` profile after the
object file's path: the instrumented and the optimised build must compile each source to the
same object path for the profile to be found. The training run starts in the user's working
directory (a relative path in its command works), and ``-fprofile-generate=DIR`` sends the
profile into the build's own directory instead of that working directory. Projects with their
own make or CMake build go through ``perflab.kernels.buildsys``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from perflab.kernels.build import BuildError, BuildResult, build, build_key, cache_root
from perflab.kernels.buildsys import build_project, profile_notes, run_training, train_argv_for
from perflab.kernels.linkorder import check_link_order
from perflab.kernels.variants import BuildTarget, Variant, VariantBuild, section_sizes, text_bytes
from perflab.startup import which

def build_variant(
    target: BuildTarget,
    v: Variant,
    *,
    train_argv: Sequence[str] = (),
    train_cwd: str | Path | None = None,
    train_timeout: float = 600.0,
    cache_dir: Path | None = None,
    jobs: int = 0,
) -> VariantBuild:
    """Build ``target`` as variant ``v`` (cached); PGO variants run ``train_argv`` in between."""
    compiler = v.driver(target.language)
    if which(compiler) is None:
        raise BuildError(f"compiler '{compiler}' is not installed (apt-get install {v.compiler})")
    if v.pgo and v.driver("c").startswith("clang"):
        raise BuildError(
            "PGO here drives gcc's -fprofile-generate/-fprofile-use; for clang build the profile "
            "with llvm-profdata yourself and pass -fprofile-use=FILE as a plain flag"
        )
    cwd = Path(train_cwd) if train_cwd is not None else Path.cwd()
    if target.template is not None:
        vb = build_project(target, v, train_argv=train_argv, train_cwd=cwd, train_timeout=train_timeout,
                           cache_dir=cache_dir, jobs=jobs)
    elif v.pgo:
        vb = _build_pgo(target, v, compiler, train_argv, cwd, train_timeout, cache_dir)
    else:
        link_line = [*v.link_line, *target.ldflags] if v.link_line is not None else None
        res: BuildResult = build(
            target.sources, target.name, compiler=compiler, cflags=[*target.cflags, *v.cflags],
            ldflags=[*v.ldflags, *target.ldflags], extra_inputs=target.extra_inputs,
            cache_dir=cache_dir, link_line=link_line,
        )
        vb = VariantBuild(v, res.path, res.cached, res.command, res.log)
    vb.sizes = section_sizes(vb.path)
    if target.template is None:
        for issue in check_link_order(vb.command):
            vb.notes.append(issue.message)
    return vb


def _run(cmd: Sequence[str], cwd: Path, what: str) -> str:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, check=False)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:300])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {first.strip()}", log)
    return log


def _build_pgo(target, v, compiler, train_argv, train_cwd, train_timeout, cache_dir) -> VariantBuild:
    """-fprofile-generate build, a training run, then -fprofile-use, all at one fixed path."""
    if not train_argv:
        raise BuildError("a PGO variant needs a training command (the study gives one by default)")
    srcs = tuple(Path(s).resolve() for s in target.sources)
    extras = tuple(Path(s).resolve() for s in target.extra_inputs)
    cflags, ldflags = [*target.cflags, *v.cflags], [*v.ldflags, *target.ldflags]
    key = build_key(srcs, compiler, ["pgo", *cflags, "|", *ldflags, "|train", *train_argv,
                                     "|cwd", str(train_cwd)], extras)
    root = (cache_dir or cache_root()) / "pgo" / key
    out = root / target.name
    if out.exists():
        log = (root / "build.log").read_text() if (root / "build.log").exists() else ""
        cmd = tuple((root / "command").read_text().split("\0")) if (root / "command").exists() else ()
        notes = (root / "notes").read_text().splitlines() if (root / "notes").exists() else []
        return VariantBuild(v, out, True, cmd, log, notes=[n for n in notes if n])
    work, prof = root / "work", root / "profile"
    for d in (work, prof):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    objs = [work / f"{i:02d}-{s.stem}.o" for i, s in enumerate(srcs)]
    logs: list[str] = []

    def compile_all(extra: list[str]) -> None:
        for src, obj in zip(srcs, objs):
            logs.append(_run([compiler, *cflags, *extra, "-c", str(src), "-o", str(obj)], work,
                             f"PGO compile of {src.name}"))

    gen = work / f"{target.name}-instrumented"
    generate = [f"-fprofile-generate={prof}"]
    compile_all(generate)
    logs.append(_run([compiler, *cflags, *generate, "-o", str(gen), *map(str, objs), *ldflags], work,
                     "PGO instrumented link"))
    run_training(train_argv_for(train_argv, gen), train_cwd, train_timeout)
    use = [f"-fprofile-use={prof}", "-fprofile-correction", "-Wmissing-profile"]
    n_before = len(logs)
    compile_all(use)
    link_cmd = [compiler, *cflags, *use, "-o", str(root / f".{target.name}.tmp"), *map(str, objs), *ldflags]
    logs.append(_run(link_cmd, work, "PGO optimised link"))
    notes = profile_notes(prof, "".join(logs[n_before:]))
    os.rename(root / f".{target.name}.tmp", out)
    command = (compiler, *cflags, *use, "-o", str(out), *map(str, objs), *ldflags)
    (root / "build.log").write_text("".join(logs))
    (root / "command").write_text("\0".join(command))
    (root / "notes").write_text("\n".join(notes))
    return VariantBuild(v, out, False, command, "".join(logs), notes=notes)


def pgo_unchanged(builds: dict[str, VariantBuild], variants: Sequence[Variant]) -> None:
    """Note on a PGO build whose machine code equals the same flags built without the profile."""
    by_key = {(v.compiler, v.cflags, v.ldflags, v.link_line): v.name for v in variants if not v.pgo}
    for v in variants:
        if not v.pgo or v.name not in builds:
            continue
        twin = by_key.get((v.compiler, v.cflags, v.ldflags, v.link_line))
        if twin is None or twin not in builds:
            continue
        a, b = text_bytes(builds[v.name].path), text_bytes(builds[twin].path)
        if a is not None and a == b:
            builds[v.name].notes.append(f"profile did not apply: the code is identical to '{twin}'")
