"""`python -m tracegrade.pytest_plugin.schema [--write]`: print (or rewrite) the transcript JSON Schema."""

import sys

from . import _main

sys.exit(_main())
