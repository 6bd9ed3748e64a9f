"""The demo BeCoMe app: a dev/test stand-in for the real app's API; not shipped in the wheel."""
