import sys
from solver2 import total

sys.exit(0 if total('nums.txt') == 4711 else 1)
