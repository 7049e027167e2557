import sys

rows = open(sys.argv[1]).read().splitlines()[1:]
print("rows:", len(rows))
print("total:", sum(int(r.split(",")[1]) for r in rows))
