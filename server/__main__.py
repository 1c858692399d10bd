"""``python -m server`` is the ``tavern`` command."""

import sys

from server.cli import main

sys.exit(main())
