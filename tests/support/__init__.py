"""What the tests stand on besides fakes: local servers (``servers``) and where the shared datasets live
(``data``). The benchmarks use them too; tests never import bench.

Import from the submodules; this package re-exports nothing.
"""
