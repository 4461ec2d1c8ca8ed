"""Validate SARIF logs against the official SARIF 2.1.0 schema (draft-04)
with Python's jsonschema, the reference validator (PyPI), formats checked
(date-time, uri), and print each error with the path it is at.

    sarif_validate.py SCHEMA LOG...

Exit 0 when every log is valid, 1 when one is not, 2 when the schema itself
is not a valid draft-04 schema or a format checker is missing."""
import json
import sys

from jsonschema import Draft4Validator

with open(sys.argv[1]) as f:
    schema = json.load(f)
Draft4Validator.check_schema(schema)
checker = Draft4Validator.FORMAT_CHECKER
# Without their optional libraries (jsonschema[format-nongpl]) these
# formats pass unchecked: refuse rather than validate less than we say.
missing = {"date-time", "uri"} - set(checker.checkers)
if missing:
    print(f"no format checker for {sorted(missing)}: install jsonschema[format-nongpl]")
    sys.exit(2)
validator = Draft4Validator(schema, format_checker=checker)
bad = 0
for path in sys.argv[2:]:
    with open(path) as f:
        doc = json.load(f)
    for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        bad += 1
        print(f"{path}: {e.message} at /{'/'.join(map(str, e.absolute_path))}")
sys.exit(1 if bad else 0)
