"""Answer-quality evaluation: question sets, metrics, the CI gate, reports and the retrieval benchmark."""
