"""Code common to the web tier, the worker and the corpus jobs; imports none of them."""
