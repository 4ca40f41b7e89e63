"""Text people type, as the service stores and shows it."""
