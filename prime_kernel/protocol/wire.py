"""Names on the wire between a kernel, the daemon and the panel: environment variables, headers,
routes and identifiers."""

from __future__ import annotations

# Put in an agent kernel's environment by the Prime provisioner.
URL_ENV = "PRIME_URL"
TOKEN_ENV = "PRIME_TOKEN"
# A remote kernel's boot document (JSON: the daemon's URL, the token): a gateway's kernels get
# no pipe, and gateways pass on only the KERNEL_* variables of a start request.
BOOT_ENV = "KERNEL_PRIME_BOOT"
# Kernel -> daemon calls carry the session's capability in this header, never in a cookie.
TOKEN_HEADER = "X-Prime-Token"

API = "/api/prime"
KERNEL_API = f"{API}/kernel"

# Session ids are made by the daemon (`s…` agents, `n…` notebooks); routes match this.
SESSION_ID = r"[A-Za-z0-9_-]{1,64}"
# Schedule ids (`h…`) and blob ids (spilled values) likewise.
SCHEDULE_ID = r"[A-Za-z0-9_-]{1,64}"
BLOB_ID = r"[A-Za-z0-9]{1,64}"
# Longest single wait a kernel call may hold a request open; clients loop over waits.
MAX_WAIT = 300.0
# Integers in queries: ids and counts fit in SQLite's 64-bit integers.
MAX_INT = 2**62
