"""`python -m groundskeeper` is the `groundskeeper` command. An agent's hook (`hook …`, the
command line `agent setup` writes) is answered without the CLI's start-up (`cli.hook_run`)."""

import sys

from groundskeeper.cli.hook_run import answer_from_argv

if not answer_from_argv(sys.argv[1:]):
    from groundskeeper.cli import main

    main()
