#!/usr/bin/env python3
"""Functions and files over the size limits in crates/*/src (tests left out).

Usage: scripts/check-sizes.py [--fn-limit N] [--file-limit N] [FILES...]

A function over --fn-limit lines (default 120) or a file over --file-limit lines
(default 800) outside tests is printed, one per line; the exit code is 1 when any is
printed, 0 otherwise. Tests are files under a `tests/` folder, files named `tests.rs`
and `#[cfg(test)]` modules. Generated tables are exempt when their file's first lines
say `@generated` or `size-exempt:` with a reason.
"""
import argparse
import pathlib
import re
import sys

FN_RE = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')
TEST_ATTR = re.compile(r'^\s*#\[cfg\(test\)\]')
MOD_BLOCK = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{')


def source_files(root):
    for path in sorted(root.glob('crates/*/src/**/*.rs')):
        if 'tests' in path.relative_to(root).parts[3:-1] or path.name == 'tests.rs':
            continue
        yield path


def without_tests(lines):
    """The lines of a file outside its `#[cfg(test)]` module blocks."""
    kept, i = [], 0
    while i < len(lines):
        if TEST_ATTR.match(lines[i]):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            m = MOD_BLOCK.match(lines[j]) if j < len(lines) else None
            if m:
                indent, k = m.group(1), j + 1
                while k < len(lines) and lines[k] != indent + '}':
                    k += 1
                i = k + 1
                continue
        kept.append(lines[i])
        i += 1
    return kept


def long_functions(lines, limit):
    for i, line in enumerate(lines):
        m = FN_RE.match(line)
        if not m or line.rstrip().endswith(';') or line.rstrip().endswith('}'):
            continue
        indent, k = m.group(1), i
        while k < len(lines) and lines[k] != indent + '}':
            k += 1
        if k < len(lines) and k - i + 1 > limit:
            yield m.group(8), k - i + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--fn-limit', type=int, default=120)
    parser.add_argument('--file-limit', type=int, default=800)
    parser.add_argument('files', nargs='*')
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    files = [pathlib.Path(f).resolve() for f in args.files] or list(source_files(root))
    for path, given in zip(files, args.files):
        if not path.is_file():
            print(f'check-sizes: {given}: not a regular file', file=sys.stderr)
            return 2
    offenders = []
    for path in files:
        text = path.read_text(encoding='utf-8', errors='replace')
        head = '\n'.join(text.split('\n')[:5])
        if '@generated' in head or 'size-exempt:' in head:
            continue
        lines = without_tests(text.split('\n'))
        name = path.relative_to(root) if path.is_relative_to(root) else path
        if len(lines) > args.file_limit:
            offenders.append((len(lines), f'{name}: file, {len(lines)} lines outside tests'))
        for fn, n in long_functions(lines, args.fn_limit):
            offenders.append((n, f'{name}: fn {fn}, {n} lines'))
    for _, text in sorted(offenders, reverse=True):
        print(text)
    return 1 if offenders else 0


if __name__ == '__main__':
    sys.exit(main())
