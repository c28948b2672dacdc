"""Devices, arrays, compiled-kernel cache and launches. Never parses Python."""
