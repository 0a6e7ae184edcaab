"""Tools: `python -m helpers.chat --stage ...` (the documented entry point) runs the terminal chat in helpers.tools.chat."""

import sys

from helpers.tools.chat import main

if __name__ == "__main__":
    sys.exit(main())
