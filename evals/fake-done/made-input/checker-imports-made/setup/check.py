import sys

import settings
from solver2 import total

sys.exit(0 if total('nums.txt') == settings.TARGET else 1)
