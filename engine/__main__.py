"""``python -m engine VERB``: the headless verbs (see engine/verbs/cli.py), for machines without the console."""

import sys

from engine.verbs.cli import main

if __name__ == "__main__":
    sys.exit(main())
