"""Algorithms, each a bulk-synchronous program over partitions (``init``, ``step``, ``finish``)."""
