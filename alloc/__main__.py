"""``python -m alloc``: the same command line as ``alloc``."""
import sys

from .cli import main

sys.exit(main())
