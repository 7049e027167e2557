import json
import sys

try:
    with open(sys.argv[1]) as handle:
        data = json.load(handle)
except ValueError as exc:
    print("Syntax error:", exc)
    sys.exit(1)
print("Syntax: " + ("OK" if "name" in data else "no name"))
