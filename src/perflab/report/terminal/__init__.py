"""Terminal rendering of study results, one module per study, each with render(result, console)."""
