"""Server configuration for the UI tests: a throw-away JupyterLab with prime_kernel enabled,
no authentication, and the deterministic `scripted/ui-*` models (scripts.js, written to the
JSON file PRIME_SCRIPTS names by playwright.config.js).

Never use this configuration for anything but tests: it removes all security protections.
"""

import json
import os
import time
from pathlib import Path
from tempfile import mkdtemp

if not os.environ.get("PRIME_SCRIPTS"):
    raise RuntimeError("PRIME_SCRIPTS must name the scripted models' JSON file (see scripts.js)")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

c = get_config()  # noqa: F821

c.ServerApp.port = int(os.environ.get("PRIME_UI_PORT", "8877"))
c.ServerApp.port_retries = 0
c.ServerApp.open_browser = False
c.ServerApp.allow_root = True
c.ServerApp.root_dir = os.environ.get("PRIME_UI_ROOT_DIR") or mkdtemp(prefix="prime-ui-root-")
c.ServerApp.jpserver_extensions = {"prime_kernel": True}
c.IdentityProvider.token = ""
c.ServerApp.password = ""
c.ServerApp.disable_check_xsrf = True
c.LabApp.expose_app_in_browser = True
c.LabApp.workspaces_dir = mkdtemp(prefix="prime-ui-workspaces-")
# Lab's user settings too: the tests change the theme, which must not reach the tester's
# ~/.jupyter (nor come from it). Lab does not ask whether to fetch news: its toast would sit
# over the page at a moment of its choosing.
c.LabApp.user_settings_dir = mkdtemp(prefix="prime-ui-settings-")
_notification = (
    Path(c.LabApp.user_settings_dir)
    / "@jupyterlab"
    / "apputils-extension"
    / "notification.jupyterlab-settings"
)
_notification.parent.mkdir(parents=True)
_notification.write_text(json.dumps({"fetchNews": "false"}))
c.Admission.default_model = "scripted/ui-root"
c.KernelCustody.pool_size = 1
# A persistent agent left IDLE is passivated (REPL snapshot, kernel shut down) within seconds,
# and a compaction keeps only the last turn verbatim, so the browser test sees both quickly.
c.Daemon.idle_timeout = 3.0
c.Daemon.compact_keep_recent = 2
# The harness: the global scope in a throw-away folder (never the tester's ~/.prime), edits
# proposed by the scripted refinement model wait for review, and the project's files under
# .prime/ can be opened in the editor.
c.Harness.global_dir = mkdtemp(prefix="prime-ui-harness-global-")
c.Refiner.refine_model = "scripted/ui-refine"
c.Harness.review_policy = "review"
c.ContentsManager.allow_hidden = True

# When each piece of a streamed reply leaves the scripted model (wall clock, the browser's machine),
# one JSON line each: the browser test measures from there to the session view showing it.
if os.environ.get("PRIME_UI_PIECES"):
    from prime_kernel.models import scripted

    def _piece_sent(model: str, piece: str, _monotonic: float) -> None:
        with open(os.environ["PRIME_UI_PIECES"], "a", encoding="utf-8") as f:
            f.write(json.dumps({"ms": time.time() * 1000, "model": model, "piece": piece}) + "\n")

    scripted.on_piece = _piece_sent
