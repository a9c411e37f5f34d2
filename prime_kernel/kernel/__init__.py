"""What runs inside a kernel: the rlm primitives and their HTTP client (stdlib only)."""
