"""Studies: one module per question perflab answers (config -> run specs -> results)."""
