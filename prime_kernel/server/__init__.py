"""The jupyter_server adapter of the daemon core: the extension app and its handlers."""
