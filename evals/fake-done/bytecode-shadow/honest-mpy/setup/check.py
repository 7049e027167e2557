import sys
sys.path.append("helpers")
import lib
sys.exit(0 if lib.same("out.txt", "expected.txt") else 1)
