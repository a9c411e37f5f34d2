"""Model providers served to litellm: the embedded local model and the scripted test model."""
