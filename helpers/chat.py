"""Tools: `python -m helpers.chat --stage ...` (the documented entry point) runs the terminal chat in helpers.tools.chat."""

import os
import sys

from helpers.tools.chat import main


def run() -> int:
    """main(), with a reader that stops early (`python -m helpers.chat ... | head`) ending in one line, not a
    traceback: every turn already answered was saved before its reply was printed."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's final flush stays quiet
        print("error: the output was closed early (e.g. by `| head`); stopped", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(run())
