"""How long the default embedded model takes to load: the first load ever (the parts assembled
and hashed into the cache, then llama.cpp's load) and a later first load in a new process (the
stamp checked by a stat, then llama.cpp's load).

    python bench/load_time.py            # a new cache folder: the first load ever
    python bench/load_time.py FOLDER     # twice with the same FOLDER: the second is a later load
    python bench/load_time.py FOLDER local/smollm2
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time

if __name__ == "__main__":
    cache = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="prime-models-")
    os.environ["PRIME_MODEL_CACHE"] = cache  # read when weights.cache_dir() is first called
    from prime_kernel.models import local, weights

    spec = local.get(sys.argv[2] if len(sys.argv) > 2 else local.MODEL)
    t0 = time.perf_counter()
    weights.ensure(spec.weights)
    t1 = time.perf_counter()
    local.load_now(spec)
    t2 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{spec.name} (cache {cache}): weights ready {t1 - t0:.2f} s, llama.cpp load "
        f"{t2 - t1:.2f} s, total {t2 - t0:.2f} s; max RSS {rss:.0f} MiB; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
