import json, sys
import rules

doc = json.load(open(sys.argv[1]))
problems = rules.problems(doc)
if problems:
    for p in problems:
        print("problem:", p)
    sys.exit(1)
print("valid:", doc["name"])
