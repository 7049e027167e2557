"""The CLI raises the collector's threshold for its command (the command's imports would be
walked again and again) and gives the process back its own when the command returns."""

from __future__ import annotations

import gc

from click.testing import CliRunner

from groundskeeper.cli.app import GC_THRESHOLD, LazyGroup, main


def test_a_command_runs_with_the_cli_threshold_and_the_process_gets_its_own_back() -> None:
    seen: list[tuple[int, int, int]] = []
    before = gc.get_threshold()
    assert before != GC_THRESHOLD

    real = LazyGroup.invoke

    def spy(self: LazyGroup, ctx: object) -> object:
        seen.append(gc.get_threshold())
        return real(self, ctx)  # type: ignore[arg-type]

    LazyGroup.invoke = spy  # type: ignore[method-assign]
    try:
        result = CliRunner().invoke(main, ["lint", "--help"])
    finally:
        LazyGroup.invoke = real  # type: ignore[method-assign]
    assert result.exit_code == 0
    assert seen == [GC_THRESHOLD]
    assert gc.get_threshold() == before
