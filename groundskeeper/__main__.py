"""`python -m groundskeeper` is the `groundskeeper` command."""

from groundskeeper.cli import main

main()
