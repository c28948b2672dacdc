"""Python AST -> typed IR. Knows nothing of LLVM or CUDA."""
