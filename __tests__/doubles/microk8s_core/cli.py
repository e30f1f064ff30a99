"""How both fakes print an answer the core computed: ``(exit code, stdout, stderr[, changed])``."""

from __future__ import annotations

import sys


def emit(result: tuple) -> int:
    """Prints the answer's stdout and stderr as they are (each ends its own lines); its exit code."""
    code, out, err = result[:3]
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return code
