"""Terminal tables, exports (hyperfine JSON, CSV, Markdown) and the self-contained HTML report."""
