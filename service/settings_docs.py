"""The table of every variable in docs/configuration.md and the `.env.example` values, from the
declaration in core/settings.py. `python -m service.settings_docs` rewrites the table.

A separate module because it changes with the documentation's format, not with configuration.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.settings import FIELDS, VARIABLES, Variable, declared_default


def shown_default(var: Variable) -> str:
    """The table's default column for a variable."""
    if var.shown_default is not None:
        return var.shown_default
    attr = next((a for a, _, v in FIELDS if v is var), None)
    value = None if attr is None else declared_default(attr)
    return "" if value in (None, "") else f"`{value}`"


def example_value(var: Variable) -> str:
    """The value `.env.example` gives a variable: its example, else its default (secrets: empty)."""
    if var.secret:
        return ""
    if var.example is not None:
        return var.example
    attr = next((a for a, _, v in FIELDS if v is var), None)
    value = None if attr is None else declared_default(attr)
    return "" if value is None else str(value)


TABLE_FILE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
TABLE_BEGIN = "<!-- settings-table: generated from core/settings.py by `python -m service.settings_docs` -->"
TABLE_END = "<!-- /settings-table -->"


def table() -> str:
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    rows += [f"| `{var.name}` | {shown_default(var)} | {var.doc} |" for var in VARIABLES]
    return "\n".join(rows)


def rewrite_table(text: str) -> str:
    """The document's text with the generated table between its markers."""
    start = text.index(TABLE_BEGIN) + len(TABLE_BEGIN)
    end = text.index(TABLE_END)
    return f"{text[:start]}\n{table()}\n{text[end:]}"


if __name__ == "__main__":
    document = Path(sys.argv[1]) if len(sys.argv) > 1 else TABLE_FILE
    document.write_text(rewrite_table(document.read_text()))
    print(f"rewrote the configuration table in {document}")
