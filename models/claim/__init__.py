"""The heir's side: the capsule a claim token opens."""
