"""Parse a JUnit XML file with junitparser (a third-party parser from PyPI)
and print, as JSON, each test case's name and result kinds, so a Rust test
can compare them with selfprobe's JSON report."""
import json
import sys

from junitparser import Error, Failure, JUnitXml, Skipped

xml = JUnitXml.fromfile(sys.argv[1])
cases = {}
# Per suite as well: `selfprobe summary` writes one suite per workspace,
# each with the same case names.
suites = {}
for suite in xml:
    mine = suites.setdefault(suite.name, {"tests": suite.tests, "failures": suite.failures,
                                          "errors": suite.errors, "skipped": suite.skipped, "cases": {}})
    for case in suite:
        kinds = []
        for r in case.result:
            if isinstance(r, Failure):
                kinds.append("failure")
            elif isinstance(r, Error):
                kinds.append("error")
            elif isinstance(r, Skipped):
                kinds.append("skipped")
        cases[case.name] = {"kinds": kinds, "text": " ".join((r.text or "") for r in case.result),
                            "messages": [r.message or "" for r in case.result]}
        mine["cases"][case.name] = cases[case.name]
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "errors": xml.errors, "cases": cases,
                  "suites": suites}))
