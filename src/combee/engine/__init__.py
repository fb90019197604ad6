"""The run engine behind the front door (:mod:`combee.api`): a run's inputs resolved and checked
(``prepare``, ``resolve``, ``guards``), its plan (``plan``), training and evaluation
(``training``, ``evaluation``, ``episodes``, ``results``), learning from traces (``learn``,
``offline_eval``), resuming (``resume``) and the demo. Users import these from ``combee``."""
