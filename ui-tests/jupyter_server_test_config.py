"""Server configuration for the UI tests: a throw-away JupyterLab with prime_kernel enabled,
no authentication, and the deterministic `scripted/ui-*` models of scripts.json.

Never use this configuration for anything but tests: it removes all security protections.
"""

import os
from pathlib import Path
from tempfile import mkdtemp

HERE = Path(__file__).parent

os.environ.setdefault("PRIME_SCRIPTS", str(HERE / "scripts.json"))
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
c.Daemon.default_model = "scripted/ui-root"
c.Daemon.pool_size = 1
