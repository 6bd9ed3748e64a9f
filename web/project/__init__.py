"""A signed-in user's project: the app API client, the context given to a turn, its sections and
tools, and the chart."""
