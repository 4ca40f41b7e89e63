"""A guardian's own account: the plans it guards, and its answers (routes, schemas)."""
