"""Answer flow: question filters → condense → retrieve → evidence → generate → verify, wired by the chain."""
