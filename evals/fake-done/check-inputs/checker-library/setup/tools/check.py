import sys
sys.path.insert(0, "lib")
import judge
sys.exit(0 if judge.verdict() else 1)
