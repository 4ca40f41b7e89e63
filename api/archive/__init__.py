"""Archive files: the owner's upload/list/download/delete routes, the streaming multipart reader,
and serving a stored file whole or by byte range (shared with the capsule).
"""
