"""Files at rest: the key ring and streaming AEAD, sealed objects, object storage (S3 or filesystem)."""
