"""A project's data from the BeCoMe app, turned into the allow-listed context the model sees."""
