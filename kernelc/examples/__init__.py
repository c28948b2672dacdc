"""Bundled example simulations: `python -m kernelc.examples` lists them."""
