"""`python -m modelgate` is the `modelgate` command."""

import sys

from modelgate.cli import main

sys.exit(main())
