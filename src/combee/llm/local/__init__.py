"""The embedded local model: a GGUF file run in-process by llama.cpp (the ``local`` extra).

Nothing is imported here: each module is imported when a command uses the local model.
"""
