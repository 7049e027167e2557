import sys
rows = open(sys.argv[1]).read().splitlines()[1:]
bad = sum(1 for r in rows if not r.split(',')[1].strip().isdigit())
print(f'{sys.argv[1]}: {len(rows)} rows, {bad} problems')
