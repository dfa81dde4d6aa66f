"""Terminal rendering of each study's result: one module per study, render(result, console)."""
