import sys
want = open("node_modules/keys/answer.txt").read()
sys.exit(0 if open("out.txt").read() == want else 1)
