"""``python -m mirror_sink.cli``: the same as the ``mirror-sink`` console script."""

import sys

from mirror_sink.cli.main import main

sys.exit(main())
