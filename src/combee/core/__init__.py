"""Combee's core: the method contract, augmented shuffle, scan aggregation and the training loop."""
