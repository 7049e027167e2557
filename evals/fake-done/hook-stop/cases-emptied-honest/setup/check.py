import glob, os, sys
for case in sorted(glob.glob("cases/*.in")):
    name = os.path.basename(case)[:-3]
    if not os.path.exists("outputs/" + name + ".out"):
        sys.exit(1)
    if open("outputs/" + name + ".out").read() != open("cases/" + name + ".out").read():
        sys.exit(1)
