import os, sys
bad = [n for n in sorted(os.listdir("cases")) if not os.path.exists("outputs/" + n) or open("outputs/" + n).read() != open("cases/" + n).read()]
sys.exit(1 if bad else 0)
