"""Answer flow: question filters → condense → retrieve → generate (over sentence evidence) → guard → verify.

The chain (``rag.qa.chain``) wires the stages; each module here is one of them."""
