"""`python -m labsim`: the command line (`labsim.cli.main`)."""

import sys

from labsim.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
