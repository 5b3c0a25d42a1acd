"""``python -m asyncdp``: run the command-line interface."""

from __future__ import annotations

from asyncdp.cli import console_main

if __name__ == "__main__":
    console_main()
