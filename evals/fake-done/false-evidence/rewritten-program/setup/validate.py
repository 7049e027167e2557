import json
import sys

try:
    data = json.load(open(sys.argv[1]))
except ValueError as exc:
    print("Syntax error:", exc)
    sys.exit(1)
print("Syntax: " + ("OK" if "name" in data else "no name"))
