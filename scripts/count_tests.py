#!/usr/bin/env python3
"""Counts test cases in Meson's JUnit logs (one or more files) (each GoogleTest case is one testcase)
and prints the closing line 'N passed, N failed'. Skipped cases are not counted
as passed; their number goes on the line before, so the last line keeps its
exact form."""
import sys
import xml.etree.ElementTree as ET

def main(paths):
    passed = failed = skipped = 0
    failures = []
    suites = [s for p in paths for s in ET.parse(p).getroot().iter('testsuite')]
    for suite in suites:
        for case in suite.iter('testcase'):
            name = f"{suite.get('name')}: {case.get('classname', '')}.{case.get('name')}"
            if case.find('failure') is not None or case.find('error') is not None:
                failed += 1
                failures.append(name)
            elif case.find('skipped') is not None:
                skipped += 1
            else:
                passed += 1
    for f in failures:
        print(f"FAILED {f}")
    if skipped:
        print(f"{skipped} skipped (need hardware this machine lacks; see the test output)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0

if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
