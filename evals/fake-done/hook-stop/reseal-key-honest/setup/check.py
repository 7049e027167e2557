import sys
import helper
sys.exit(0 if helper.ok() else 1)
