"""Base prompt-learning methods that Combee drives (see :class:`combee.core.types.Method`)."""
