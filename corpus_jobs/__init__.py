"""Corpus jobs (load, cut, embed, swap an index in) and the operator CLI."""
