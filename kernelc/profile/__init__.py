"""`python -m kernelc.profile`: runs a script with kernel timing on and reports, per kernel,
its share of the time and how close it comes to the device's roofline.

See `report.py` for what is collected and printed, and docs/profiling.md for how to read it.
"""
