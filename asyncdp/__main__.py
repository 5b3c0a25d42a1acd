"""``python -m asyncdp``: run the command-line interface."""

from __future__ import annotations

from asyncdp.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
