#!/usr/bin/env bash
# Checks satquic's upstream patches for quinn against the quinn commit they were written for.
#
# Usage: check-upstream-patches.sh [QUINN_GIT_DIR]
#
# QUINN_GIT_DIR is a quinn repository (a work tree or a bare repository) that holds the commit
# named in QUINN_COMMIT next to this script. The script exports that commit into a temporary
# directory, applies each *.patch of this directory alone, then all of them in order, and runs
# quinn-proto's tests (`cargo test -p quinn-proto --locked`, the whole crate) after each. It
# prints one line per check and exits 1 if any patch fails to apply cleanly or any test fails.
# Without a QUINN_GIT_DIR it prints one line and exits 0.
#
# Builds run under `nice -n 19`; CARGO_TARGET_DIR is used if set (quinn builds are heavy: point
# it at a directory kept between runs), otherwise a directory inside the temporary one.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ $# -eq 0 || -z "${1:-}" ]]; then
    echo "check-upstream-patches: skipped, no quinn checkout given (usage: $0 QUINN_GIT_DIR)"
    exit 0
fi
if [[ $# -gt 1 ]]; then
    echo "check-upstream-patches: one argument expected, the quinn checkout" >&2
    exit 2
fi
quinn="$1"
commit="$(tr -d '[:space:]' < "$here/QUINN_COMMIT")"
if ! git -C "$quinn" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "check-upstream-patches: $quinn is not a git repository holding quinn commit $commit" >&2
    exit 2
fi
mapfile -t patches < <(find "$here" -maxdepth 1 -name '*.patch' | sort)
if [[ ${#patches[@]} -eq 0 ]]; then
    echo "check-upstream-patches: no *.patch files in $here" >&2
    exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/quinn-upstream.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target}"
failed=0

# A fresh export of the recorded commit in $work/$1.
export_tree() {
    mkdir "$work/$1"
    git -C "$quinn" archive "$commit" | tar -x -C "$work/$1"
    git -C "$work/$1" init -q
}

# Applies the patches given after the tree name; says which one does not apply.
apply() {
    local tree="$1"
    shift
    for patch in "$@"; do
        if ! git -C "$work/$tree" apply --check "$patch" 2>"$work/$tree.apply.log" ||
            ! git -C "$work/$tree" apply "$patch" 2>>"$work/$tree.apply.log"; then
            echo "FAIL $tree: $(basename "$patch") does not apply: $(head -n 1 "$work/$tree.apply.log")"
            return 1
        fi
    done
}

# Runs quinn-proto's tests in the tree; prints the test counts or the failure.
run_tests() {
    local tree="$1" log="$work/$1.test.log"
    if (cd "$work/$tree" && nice -n 19 cargo test -p quinn-proto --locked) >"$log" 2>&1; then
        local passed
        passed="$(awk '/^test result: ok/ { for (i = 1; i < NF; i++) if ($(i + 1) == "passed;") n += $i }
            END { print n }' "$log")"
        echo "PASS $tree: applies cleanly, cargo test -p quinn-proto: $passed tests passed"
    else
        echo "FAIL $tree: cargo test -p quinn-proto failed:"
        grep -E '^(test .* FAILED|error(\[|:)|test result:)' "$log" | head -n 20 | sed 's/^/    /'
        return 1
    fi
}

echo "quinn $commit ($(git -C "$quinn" log -1 --format=%cs "$commit")), ${#patches[@]} patches"
for patch in "${patches[@]}"; do
    tree="$(basename "$patch" .patch | cut -c1-4)-alone"
    export_tree "$tree"
    if apply "$tree" "$patch"; then
        run_tests "$tree" || failed=1
    else
        failed=1
    fi
done
export_tree all-in-order
if apply all-in-order "${patches[@]}"; then
    run_tests all-in-order || failed=1
else
    failed=1
fi
exit "$failed"
