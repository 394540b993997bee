import sys
from pathlib import Path

# dashboard_model.py sits beside the tests that use it
sys.path.insert(0, str(Path(__file__).parent))
