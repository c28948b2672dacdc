"""The typed, structured IR: the one place where a kernel's meaning lives."""
