"""The product's command line and the local supervisor: `become-assistant` and `run`."""
