"""Answer evaluation (docs/spec/behaviour.md B-35): run questions through the real path, grade in
code and by blind judges, compare setups by a paired bootstrap, report in HTML."""
