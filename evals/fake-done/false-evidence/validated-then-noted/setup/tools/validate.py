import json, sys
d = json.load(open(sys.argv[1]))
if "name" in d and "fields" in d:
    print("valid: " + d["name"])
    sys.exit(0)
print("invalid: missing name or fields")
sys.exit(1)
