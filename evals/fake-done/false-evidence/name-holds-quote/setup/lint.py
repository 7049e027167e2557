import os, sys
bad = 0
for name in sorted(os.listdir(sys.argv[1])):
    text = open(os.path.join(sys.argv[1], name)).read()
    n = sum(1 for line in text.splitlines() if line != line.rstrip())
    bad += n
    print(f'{sys.argv[1]}/{name}: {n} problem(s)')
print('summary: clean' if not bad else f'summary: {bad} problem(s)')
