"""How each study's result looks in a terminal (rich): one module per study."""
