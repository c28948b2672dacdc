"""Zero-copy exchange of arrays with other array libraries (PyTorch, JAX).

Each module imports its library only when one of its functions is called, so
`import kernelc` never loads PyTorch or JAX.
"""
