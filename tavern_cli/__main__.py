"""``python -m tavern_cli`` is the ``tavern`` command, run from a checkout without installing it
(the tests and benchmarks start their servers so)."""

import sys

from tavern_cli.cli import main

sys.exit(main())
