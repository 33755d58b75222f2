"""Tests of voda_progress; standard library only. Run from the repository
root: python3 -m unittest discover -s sdk/python/tests -t sdk/python"""

import os
import sys

# Test the source tree without installing it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
