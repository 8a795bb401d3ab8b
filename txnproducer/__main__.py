"""``python -m txnproducer``: the same as the ``txnproducer`` console script."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
