"""The plan's contents from a browser: what the owner leaves (`assets`), the letters
(`messages`) and the documents (`archive`), each change the JSON route's own model call, each
form read by the route's schema (api/owner/forms.py). docs/pages.md, "The plan's contents".
"""
