import sys
for line in sorted(l.strip() for l in open(sys.argv[1]) if l.strip()):
    print(line)
