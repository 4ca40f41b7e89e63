"""The heir's side: the capsule a claim token opens, its downloads, the heir's wallet, the claim link."""
