"""spark-submit entry point: ``spark-submit ... submit_entry.py connector.json [--checkpoint ...]``."""

import sys

from api.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["spark", *sys.argv[1:], "--master", "submit"]))
