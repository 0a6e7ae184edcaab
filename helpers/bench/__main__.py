"""Plumbing: `python -m helpers.bench COMMAND ...` runs helpers.bench.cli.main."""

import sys

from helpers.bench.cli import main

__all__: list[str] = []

sys.exit(main())
