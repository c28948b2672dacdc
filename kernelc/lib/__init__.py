"""Library functions written in kernelc's own language (`@kc.func` overloads).

They are public as `kc.<name>` like builtins, and every backend compiles them like user
code. Each module lists its public names in `__all__`; `kernelc/__init__.py` loads a module
the first time one of its names is asked for, so importing kernelc does not pay for them.
"""
