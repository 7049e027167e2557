import json
import sys

data = json.load(open(sys.argv[1]))
if "price" not in data:
    print("INVALID: missing price")
    sys.exit(1)
print("Syntax: OK")
