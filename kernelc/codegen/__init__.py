"""Backends: each reads the typed IR and emits code for one kind of device."""
