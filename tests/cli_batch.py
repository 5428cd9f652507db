"""Run several `dk-mirror` command lines in one process: `python -m tests.cli_batch ARGV_JSON`.

Each command gets a fresh click context, as its own process would; what one prints is framed
by markers on stdout and stderr, with its exit code. An exception that escapes a command is
printed as Python prints an uncaught one (a "Traceback"), then the next command runs. One
interpreter start per batch keeps a test that runs every command many times affordable.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

# Modules (comma-separated) the batch's process must not import, as on a machine without them:
# a store URL whose driver is missing (psycopg) must still end in one line naming the extra.
HIDE_MODULES = "DK_MIRROR_TEST_HIDE_MODULES"

BEGIN = "\x00begin"
END = "\x00end"


def main() -> None:
    """Run each argv list of the JSON array in argv[1]."""
    for module in filter(None, os.environ.get(HIDE_MODULES, "").split(",")):
        sys.modules[module] = None  # type: ignore[assignment]  # import raises ImportError
    from mirror.cli.main import cli

    for index, args in enumerate(json.loads(sys.argv[1])):
        for stream in (sys.stdout, sys.stderr):
            print(f"{BEGIN} {index}", file=stream, flush=True)
        code = 0
        try:
            cli.main(args=args, prog_name="dk-mirror", standalone_mode=True)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            print(f"{END} {index} {code}", file=stream, flush=True)


if __name__ == "__main__":
    main()
