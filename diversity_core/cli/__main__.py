"""``python -m diversity_core.cli``."""

import sys

from . import main

sys.exit(main())
