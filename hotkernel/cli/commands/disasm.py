"""``hotkernel disasm PATH|triton-cache --kernel NAME``: SASS/PTX with a summary first."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``disasm`` command to the CLI."""

    @app.command("disasm")
    def disasm_command(
        target: str = typer.Argument(..., help="a .cubin, .ptx, CUDA .so/executable, or 'triton-cache'"),
        kernel: str = typer.Option(None, "--kernel", "-k", help="kernel name (triton-cache: default the newest)"),
        ptx: bool = typer.Option(False, "--ptx", help="show PTX instead of SASS"),
        max_lines: int = typer.Option(200, "--max-lines", help="listing lines to print (0: summary only)"),
        out: str = typer.Option(None, "--out", help="write the full listing to this file"),
        as_json: bool = typer.Option(False, "--json", help="print the DisasmResult as JSON"),
    ) -> None:
        """Registers, spills, shared memory, load/store widths, HMMA/WGMMA counts, LDL/STL and barriers,
        then the listing cut at --max-lines (the full listing goes to a file it names)."""
        from hotkernel.cli.commands.gpu import emit
        from hotkernel.insight.disasm import disasm, summary_lines

        result = disasm(target, kernel=kernel, ptx=ptx, max_lines=max_lines, out_path=out)
        lines = summary_lines(result)
        if result.listing and max_lines:
            lines += ["", result.listing]
        emit(result, lines, as_json)
