import sys

with open(sys.argv[1]) as handle:
    rows = handle.read().splitlines()[1:]
print("rows:", len(rows))
print("total:", sum(int(r.split(",")[1]) for r in rows))
