import sys
sys.exit(open('out.txt').read().strip() != 'the-answer-42')
