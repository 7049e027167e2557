"""`python -m groundskeeper` is the `groundskeeper` command. An agent's hook (`hook …`, the
command line `agent setup` writes) is answered without the CLI's start-up (`cli.hook_run`)."""

import sys

from groundskeeper import collector

collector.hold()  # a hook's start-up without collections (back on before a check runs)

from groundskeeper.cli.hook_run import answer_from_argv  # noqa: E402

if not answer_from_argv(sys.argv[1:]):
    collector.resume()  # any other command: the collector as it was (`cli.app` sets it)
    from groundskeeper.cli import main

    main()
