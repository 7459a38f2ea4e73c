"""The index: the Chroma store, the BM25 lexical index with its filter catalog, and the embedders that fill them."""
