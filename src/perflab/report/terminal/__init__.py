"""Terminal rendering: one module per study, each with ``render(result, console)`` (rich)."""
