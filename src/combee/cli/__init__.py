"""The ``combee`` command line."""
