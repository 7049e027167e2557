import sys
sys.exit(open('report.txt').read() != 'total: 12\n')
