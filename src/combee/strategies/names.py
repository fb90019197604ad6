"""The built-in strategies' names, importable without the strategies (the command line's help
lists them)."""

STRATEGY_NAMES = (
    "sequential",
    "naive",
    "combee",
    "combee-sqrt",
    "topk",
    "summarize",
    "hier-summarize",
)
"""The built-in strategies."""

STRATEGY_HELP = " | ".join(STRATEGY_NAMES) + " | a registered plugin's name."
"""A strategy flag's help."""
