"""Answer flow: question filters → condense → retrieve → generate (over sentence evidence) → guard → verify, wired by the chain."""
