"""`python -m book`: build the book's two editions (see book.build)."""

import sys

from book.build import main

sys.exit(main())
