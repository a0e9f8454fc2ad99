#!/usr/bin/env python3
"""No function in the project's sources is longer than 70 lines (TIGER_STYLE, issue 17).

Runs clang-tidy-14 with the repository's .clang-tidy (readability-function-size,
LineThreshold 70) over every .cc under the source folders below (not tests/ or
bench/), with the flags of BUILD_DIR/compile_commands.json, and fails listing
every offender as `file:line: function (N lines)`. clang-tidy counts a
function's lines from its body's opening brace to its closing one.

  function_length_test.py BUILD_DIR SOURCE_ROOT

A missing clang-tidy-14 fails the test (it does not skip): a check that quietly
stops running would let long functions back in. scripts/install_deps.sh
installs it.
"""
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

SOURCE_FOLDERS = ["apps", "backend_sim", "backend_verbs", "core", "launch", "model", "report",
                  "runner", "scenario"]
CLANG_TIDY = "clang-tidy-14"

# clang-tidy's report of one long function: the warning, then a note with the count.
WARNING = re.compile(r"^(?P<file>.+?):(?P<line>\d+):\d+: warning: function '(?P<name>[^']+)' "
                     r"exceeds recommended size/complexity thresholds \[readability-function-size\]$")
LINES_NOTE = re.compile(r"^.+?:\d+:\d+: note: (?P<lines>\d+) lines including whitespace and "
                        r"comments \(threshold \d+\)$")


def sources(root):
    """Every .cc under the source folders, as paths relative to the root, sorted."""
    found = []
    for folder in SOURCE_FOLDERS:
        found.extend(p.relative_to(root) for p in (root / folder).rglob("*.cc") if p.is_file())
    return sorted(found)


def compiled_files(build_dir):
    """The absolute paths compile_commands.json has flags for."""
    with open(build_dir / "compile_commands.json", encoding="utf-8") as f:
        entries = json.load(f)
    return {os.path.realpath(os.path.join(e["directory"], e["file"])) for e in entries}


def tidy(root, build_dir, source):
    """(offenders, failure) of one file: offenders as [line, name, lines or None]."""
    # GCC's LTO flags (the release build's libraries, meson option lto) are
    # unknown to clang: ignored, not an error under CI's -Werror.
    proc = subprocess.run([CLANG_TIDY, "--quiet", f"--config-file={root / '.clang-tidy'}",
                           "--extra-arg=-Wno-ignored-optimization-argument",
                           f"-p={build_dir}", str(root / source)],
                          capture_output=True, text=True, check=False)
    offenders = []
    for line in proc.stdout.splitlines():
        warning = WARNING.match(line)
        if warning:
            # None until its note: a function flagged for another of the
            # check's thresholds than lines is still an offender.
            offenders.append([int(warning["line"]), warning["name"], None])
            continue
        note = LINES_NOTE.match(line)
        if note and offenders and offenders[-1][2] is None:
            offenders[-1][2] = int(note["lines"])
    failure = None
    if proc.returncode != 0:
        failure = f"{source}: {CLANG_TIDY} exited with {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    return offenders, failure


def line_threshold(root):
    """LineThreshold of readability-function-size in the .clang-tidy."""
    text = (root / ".clang-tidy").read_text(encoding="utf-8")
    found = re.search(r"readability-function-size\.LineThreshold\s*\n\s*value:\s*'?(\d+)", text)
    return int(found[1]) if found else None


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    build_dir = pathlib.Path(sys.argv[1]).resolve()
    root = pathlib.Path(sys.argv[2]).resolve()
    if shutil.which(CLANG_TIDY) is None:
        print(f"FAIL: {CLANG_TIDY} is not installed, so function lengths cannot be checked "
              f"(scripts/install_deps.sh installs the Debian package {CLANG_TIDY})")
        return 1
    if not (build_dir / "compile_commands.json").is_file():
        print(f"FAIL: {build_dir}/compile_commands.json is missing (meson setup writes it)")
        return 1

    compiled = compiled_files(build_dir)
    checked = []
    for source in sources(root):
        if os.path.realpath(root / source) in compiled:
            checked.append(source)
        else:
            # Without build flags the file cannot be parsed: one of two
            # alternatives (backend_verbs/cuda_memory_absent.cc where CUDA is
            # built), or backend_verbs/ in a build without libibverbs.
            print(f"not checked, not compiled in {build_dir.name}/: {source}")

    jobs = max(1, len(os.sched_getaffinity(0)))
    offenders = []
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(lambda s: (s, tidy(root, build_dir, s)), checked)
        for source, (found, failure) in results:
            offenders.extend((str(source), *o) for o in found)
            if failure:
                failures.append(failure)

    for failure in failures:
        print(failure)
    for source, line, name, lines in sorted(offenders):
        size = f"{lines} lines" if lines is not None else "over another size threshold"
        print(f"{source}:{line}: {name} ({size})")
    limit = f"{line_threshold(root)} lines"
    if failures:
        print(f"FAIL: {CLANG_TIDY} could not check {len(failures)} of {len(checked)} files "
              f"(see above); {len(offenders)} functions longer than {limit} in the others")
        return 1
    if offenders:
        print(f"FAIL: {len(offenders)} functions longer than {limit} in {len(checked)} files "
              f"checked; split each into named stages (TIGER_STYLE)")
        return 1
    print(f"PASS: no function longer than {limit} in {len(checked)} files checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
