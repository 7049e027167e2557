import sys
import lib
sys.exit(0 if lib.same("out.txt", "expected.txt") else 1)
