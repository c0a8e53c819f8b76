#!/usr/bin/env python3
"""Checks that the documents quote commands and files that exist.

Usage: scripts/check-doc-commands.py [--bin PATH] [FILES...]

Every `satquic CMD ...` quoted in the given Markdown files (default: README.md, docs/*.md
and BENCHMARKS.md; code blocks and inline code, `cargo run ... -p satquic -- CMD` too) must
name a subcommand that exists, and each of its flags must appear in `satquic CMD --help`.
Every repository path the files name (a relative link, or inline code starting with
crates/, scripts/, peers/, vendor/, docs/ or examples/) must exist. Every congestion-control
spec of four parts or more quoted in README.md or docs/ (code blocks and inline code) is the
`satellite` profile's and must be `SATELLITE_CC` as crates/cc/src/profile.rs defines it, so
that a change of the profile fails here until the documents follow (shorter specs are
examples; BENCHMARKS.md quotes variants of the profile on purpose). Problems are printed
one per line (FILE:LINE: what); the exit code is 1 when there is any, 0 otherwise, and 2
for bad arguments or a missing binary (build it: `cargo build --release -p satquic`).
docs/history/ is a record of the past and is not checked.
"""
import argparse
import functools
import os
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Subcommands that take a sub-subcommand.
NESTED = {"campaign"}
# Tokens that end a command on a line of shell.
SEPARATORS = {";", "|", "||", "&&", "&", "#", "/"}
PATH_PREFIXES = ("crates/", "scripts/", "peers/", "vendor/", "docs/", "examples/")
PROFILE_SOURCE = ROOT / "crates/cc/src/profile.rs"
SATELLITE_CC = re.compile(r'pub const SATELLITE_CC: &str\s*=\s*"([^"]+)";')
# A spec: AVOIDANCE, then +PART[:OPTIONS] parts; one of this many parts or more is the profile.
SPEC = re.compile(r"(?<![\w/.+-])[a-z][a-z0-9]*(?:\+[a-z][a-z0-9-]*(?::[^\s`+'\"()|]*)?)+")
PROFILE_MIN_PARTS = 4
INLINE_CODE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def default_files():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "BENCHMARKS.md"]
    return [f for f in files if f.exists()]


@functools.lru_cache(maxsize=None)
def help_text(binary, words):
    proc = subprocess.run([binary, *words, "--help"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def code_lines(text):
    """(line number, code) for each line of code: fenced or indented blocks, inline spans."""
    fenced = False
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            code = line.strip()
            if not pending:
                start = number
            if code.endswith("\\"):
                pending += code[:-1] + " "
                continue
            yield start, pending + code
            pending = ""
            continue
        for span in INLINE_CODE.findall(line):
            yield number, span


def tokens(code):
    try:
        return shlex.split(code, comments=False, posix=True)
    except ValueError:
        return code.split()


def commands(code):
    """(subcommand words, flags) of each satquic command in one line of code."""
    words = tokens(code)
    for i, word in enumerate(words):
        if word.endswith("satquic") and not word.startswith("-"):
            rest = words[i + 1:]
        elif word == "--" and "satquic" in words[:i]:
            rest = words[i + 1:]
        else:
            continue
        if not rest or rest[0].startswith("-") or not re.fullmatch(r"[a-z]+", rest[0]):
            continue
        sub = [rest[0]]
        args = rest[1:]
        if rest[0] in NESTED and args and re.fullmatch(r"[a-z]+", args[0]):
            sub.append(args[0])
            args = args[1:]
        flags = []
        for arg in args:
            if arg in SEPARATORS or arg.startswith("#"):
                break
            arg = arg.strip("[]()")
            if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*|\[.*)?", arg):
                flags.append(re.split(r"[=\[]", arg)[0])
        yield tuple(sub), flags


def anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    return {anchor(m.group(1)) for m in re.finditer(r"^#+ (.*)$", path.read_text(), re.M)}


def links(line):
    """(target, anchor or None) of each link to a repository file."""
    for target, fragment in LINK.findall(line):
        if "://" not in target and not target.startswith("mailto:"):
            yield target, fragment[1:] or None


def code_paths(line):
    """Repository paths named in inline code (relative to the repository's root)."""
    for span in INLINE_CODE.findall(line):
        word = span.split()[0] if span.split() else ""
        if word.startswith(PATH_PREFIXES) and "*" not in word and "<" not in word:
            yield word.rstrip(".,:;")


def satellite_cc(source=PROFILE_SOURCE):
    """The profile's spec string as the source defines it (never a copy kept here)."""
    m = SATELLITE_CC.search(source.read_text())
    if not m:
        raise ValueError(f"no `pub const SATELLITE_CC: &str = \"...\";` in {source}")
    return m.group(1)


def profile_specs(code):
    """The specs of PROFILE_MIN_PARTS parts or more in one line of code."""
    for m in SPEC.finditer(code):
        spec = m.group(0).rstrip(".,:;")
        if spec.count("+") + 1 >= PROFILE_MIN_PARTS:
            yield spec


def quotes_the_profile(rel):
    """README.md and docs/ quote the profile; BENCHMARKS.md quotes variants of it."""
    return rel.as_posix() == "README.md" or rel.as_posix().startswith("docs/")


def check_profile(path, rel, profile):
    problems = []
    for number, code in code_lines(path.read_text()):
        for spec in profile_specs(code):
            if spec != profile:
                problems.append(f"{rel}:{number}: `{spec}` is not the satellite profile's spec "
                                f"SATELLITE_CC (crates/cc/src/profile.rs): `{profile}`")
    return problems


def check_file(path, binary):
    problems = []
    text = path.read_text()
    rel = path.relative_to(ROOT)
    for number, code in code_lines(text):
        for sub, flags in commands(code):
            usage = help_text(binary, sub)
            if usage is None:
                problems.append(f"{rel}:{number}: `satquic {' '.join(sub)}` is not a command")
                continue
            for flag in flags:
                if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", usage):
                    problems.append(f"{rel}:{number}: `satquic {' '.join(sub)}` has no flag {flag}")
    if quotes_the_profile(rel):
        problems += check_profile(path, rel, satellite_cc())
    for number, line in enumerate(text.splitlines(), 1):
        for target in code_paths(line):
            if not (ROOT / target).exists():
                problems.append(f"{rel}:{number}: no such file {target}")
        for target, fragment in links(line):
            linked = path.parent / target
            if not linked.exists():
                problems.append(f"{rel}:{number}: no such file {target}")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                problems.append(f"{rel}:{number}: {target} has no heading #{fragment}")
    return problems


def main(argv):
    p = argparse.ArgumentParser(description="Checks the commands and files the documents quote.")
    p.add_argument("--bin", default=str(ROOT / "target/release/satquic"), help="the satquic binary")
    p.add_argument("files", nargs="*", help="Markdown files (default: README.md, docs/*.md, BENCHMARKS.md)")
    args = p.parse_args(argv)
    if not os.access(args.bin, os.X_OK):
        print(f"check-doc-commands: no satquic binary at {args.bin}: build it with "
              "`cargo build --release -p satquic` or pass --bin", file=sys.stderr)
        return 2
    files = [pathlib.Path(f).resolve() for f in args.files] or default_files()
    missing = [f for f in files if not f.exists()]
    if missing:
        print(f"check-doc-commands: no such file {missing[0]}", file=sys.stderr)
        return 2
    problems = [p for f in files for p in check_file(f, args.bin)]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
